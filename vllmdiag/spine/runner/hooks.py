"""What a job adds to :func:`~vllmdiag.spine.runner.run_cells`, typed: the few places
where a job's cells differ from a matrix cell, and nothing else.

A job passes one :class:`CellHooks` (its own subclass; the base class adds nothing):

- :meth:`CellHooks.started`: the run directory exists (a profile says which sides it
  captures);
- :meth:`CellHooks.wrap`: how a cell's task is executed (a profile runs the command
  under its profiler, a bisect check in the user's working directory), and what is
  done once it ran (a profile reads what its profiler left);
- :meth:`CellHooks.follow_up`: cells a finished (or reused) cell asks for, run after it
  on legs already built (a capture that fell back to another profiler);
- :meth:`CellHooks.finishing`: every cell is settled (or the run was stopped), before
  ``run_finished`` (a profile's warnings about its sides).

Each hook gets the run's ``emit``: the job's own events go through it into the one
``run.jsonl`` (each named after its type, as the runner's are) and to the job's
observer, in the order they happen. ``wrap`` and its ``after`` run on the cell's own
thread; their ``emit`` hands events to the runner's thread, which alone journals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from vllmdiag.events import Observer
from vllmdiag.model.outcome import CellResult
from vllmdiag.plan.cells import CellPlan
from vllmdiag.spine.rundir import RunDir
from vllmdiag.spine.runner.executor import CellRun, CellTask

#: The job's own events (what its hooks emit besides the runner's).
E = TypeVar("E")


def _nothing(_done: CellRun) -> None:
    return None


@dataclass(frozen=True)
class Wrapped:
    """A cell's task as the job has it executed. ``after``: called with how it ran
    (never for a run that was stopped); a
    :class:`~vllmdiag.errors.ProcessError` it raises makes the cell an ERROR with its
    message, as one raised by ``wrap`` itself does (the command then never runs)."""

    task: CellTask
    after: Callable[[CellRun], None] = _nothing


class CellHooks(Generic[E]):
    """The hooks of a job that runs cells (see the module's docstring); each one here
    does nothing."""

    def started(self, run: RunDir, emit: Observer[E]) -> None:
        """The run directory exists and ``run_started`` is journaled."""

    def wrap(self, cell: CellPlan, task: CellTask, emit: Observer[E]) -> Wrapped:
        """How ``cell``'s task runs (its log header then names the wrapped command)."""
        return Wrapped(task)

    def follow_up(
        self, cell: CellPlan, result: CellResult, emit: Observer[E]
    ) -> Sequence[CellPlan]:
        """Cells to run after ``cell`` (a reused result asks again, as after a run)."""
        return ()

    def finishing(self, results: Sequence[CellResult], emit: Observer[E]) -> None:
        """Every cell is settled (``results`` in plan order, SKIPPED where the run was
        stopped first); ``run_finished`` comes next."""
