"""The falsification matrix job: a baseline plus arms over workloads, to a verdict."""

from vllmdiag.jobs.matrix.job import MatrixOptions, decide_verdict, run_matrix
from vllmdiag.jobs.matrix.matrix_plan import MatrixPlan, plan_matrix
from vllmdiag.jobs.matrix.report import MatrixReport

__all__ = [
    "MatrixOptions",
    "MatrixPlan",
    "MatrixReport",
    "decide_verdict",
    "plan_matrix",
    "run_matrix",
]
