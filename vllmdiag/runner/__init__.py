"""Running cells: legs built and checked, each cell in its own process group, judged,
journaled, resumable. Every job that runs cells does it through :func:`run_cells`."""

from vllmdiag.runner.cells import CellsReport, FollowUp, RunOptions, run_cells
from vllmdiag.runner.executor import CellRun, CellTask, Executor, LocalExecutor

__all__ = [
    "CellRun",
    "CellTask",
    "CellsReport",
    "Executor",
    "FollowUp",
    "LocalExecutor",
    "RunOptions",
    "run_cells",
]
