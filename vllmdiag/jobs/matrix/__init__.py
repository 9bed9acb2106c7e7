"""The falsification matrix job: a baseline plus arms over workloads, to a verdict."""

from vllmdiag.jobs.matrix.job import MatrixOptions, MatrixReport, decide_verdict, run_matrix

__all__ = ["MatrixOptions", "MatrixReport", "decide_verdict", "run_matrix"]
