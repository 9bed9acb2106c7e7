"""Running cells: legs built and checked, each cell in its own process group, judged,
journaled, resumable. Every job that runs cells does it through :func:`run_cells`."""

from vllmdiag.spine.runner.cells import CellsReport, RunOptions, run_cells
from vllmdiag.spine.runner.executor import (
    CellRun,
    CellTask,
    ClusterExecutor,
    Executor,
    LocalExecutor,
    Node,
    NodeLost,
)
from vllmdiag.spine.runner.hooks import CellHooks, Wrapped

__all__ = [
    "CellHooks",
    "CellRun",
    "CellTask",
    "CellsReport",
    "ClusterExecutor",
    "Executor",
    "LocalExecutor",
    "Node",
    "NodeLost",
    "RunOptions",
    "Wrapped",
    "run_cells",
]
