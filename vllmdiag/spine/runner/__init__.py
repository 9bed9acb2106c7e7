"""Running cells: legs built and checked, each cell in its own process group, judged,
journaled, resumable. Every job that runs cells does it through :func:`run_cells`."""

from vllmdiag.spine.runner.cells import CellsReport, FollowUp, RunOptions, run_cells
from vllmdiag.spine.runner.executor import (
    CellRun,
    CellTask,
    ClusterExecutor,
    Executor,
    LocalExecutor,
    Node,
    NodeLost,
)

__all__ = [
    "CellRun",
    "CellTask",
    "CellsReport",
    "ClusterExecutor",
    "Executor",
    "FollowUp",
    "LocalExecutor",
    "Node",
    "NodeLost",
    "RunOptions",
    "run_cells",
]
