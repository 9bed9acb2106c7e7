"""What a profile adds to the cell runner: its :class:`ProfileHooks`.

Both ways to profile (a recipe's sides, :mod:`recipe_run`; existing environments,
:mod:`run`) run each (side, backend) as one ordinary cell of
:func:`~vllmdiag.spine.runner.run_cells`; these hooks are all that differs from a matrix
cell: the run says which sides it captures (``profile_started``), each cell's task is
wrapped under its profiler (:class:`~vllmdiag.jobs.profile.capture_task.CaptureWrap`), a
side whose nsys capture failed asks for a torch capture next, and before the run ends
the sides whose profilers were switched on differently are warned of. Every event goes
through the runner's one journal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from vllmdiag.events import Note, Observer
from vllmdiag.jobs.profile.capture import Backend, CaptureResult, fallback
from vllmdiag.jobs.profile.capture_task import CaptureWrap, CellCapture, read_record
from vllmdiag.jobs.profile.events import CaptureFallback, ProfileEvent, ProfileStarted
from vllmdiag.jobs.profile.outcome import window_warnings
from vllmdiag.model.outcome import CellResult
from vllmdiag.plan.cells import CellPlan
from vllmdiag.spine.rundir import RunDir
from vllmdiag.spine.runner import CellHooks, CellTask, Wrapped


class ProfileHooks(CellHooks[ProfileEvent]):
    """A profile's capture cells (see the module's docstring). ``started``: the
    ``profile_started`` event of a run directory; ``backends``: those asked for (a
    fallback never captures a side twice with one)."""

    def __init__(
        self,
        wrap: CaptureWrap,
        backends: Sequence[Backend],
        started: Callable[[Path], ProfileStarted],
    ) -> None:
        self.capture = wrap
        self.backends = tuple(backends)
        self._started = started
        self.planned: dict[str, tuple[CellPlan, CellCapture]] = {}
        self.run: RunDir | None = None

    def cell(
        self, side: CellPlan, name: str, which: Backend, script: bool | None = None
    ) -> CellPlan:
        """The cell that captures side ``name`` (its cell ``side``) under ``which``."""
        cell = replace(side, id=f"{side.id}.{which.dirname}")
        self.planned[cell.id] = (side, CellCapture(name, which, script))
        return cell

    def started(self, run: RunDir, emit: Observer[ProfileEvent]) -> None:
        self.run = run
        emit(self._started(run.path))

    def wrap(self, cell: CellPlan, task: CellTask, emit: Observer[ProfileEvent]) -> Wrapped:
        return self.capture.wrap(self.planned[cell.id][1], task, emit)

    def follow_up(
        self, cell: CellPlan, result: CellResult, emit: Observer[ProfileEvent]
    ) -> list[CellPlan]:
        """A side whose nsys capture failed is captured with torch next."""
        side, what = self.planned[cell.id]
        captured = self.captured(result)
        instead = fallback(what.backend, captured, self.backends) if captured else None
        if captured is None or instead is None:
            return []
        emit(CaptureFallback(what.side, what.backend, instead, captured.reason or ""))
        return [self.cell(side, what.side, instead, what.script)]

    def finishing(self, results: Sequence[CellResult], emit: Observer[ProfileEvent]) -> None:
        for warning in window_warnings([self.capture_of(r) for r in results]):
            emit(Note("warning", warning))

    def captured(self, result: CellResult) -> CaptureResult | None:
        """The cell's capture: made by this run, else (a result reused on resume) its
        record; None when the cell never captured (its leg failed, the run stopped)."""
        made = self.capture.made(result.id)
        if made is not None or not result.outcome.is_result or self.run is None:
            return made
        found = read_record(self.run.out_dir(result.id))
        if found is None:
            return None
        return replace(found, out=self.run.out_dir(result.id), log=self.run.log_path(result.id))

    def capture_of(self, result: CellResult) -> CaptureResult:
        """What a cell's capture came to; a cell that never captured is a failed capture
        saying why."""
        found = self.captured(result)
        if found is not None:
            return found
        assert self.run is not None
        _, what = self.planned[result.id]
        reason = result.reason or f"the cell ended {result.outcome.value}"
        return CaptureResult(what.side, what.backend, False, self.run.out_dir(result.id), (),
                             reason, 0.0, self.run.log_path(result.id),
                             cell=result.id)  # fmt: skip
