"""The end of every capture run: its warnings said, ``profile.json`` written, and
(unless it was stopped) its first two sides diffed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vllmdiag.events import Note, Observer
from vllmdiag.jobs.profile.capture import Backend, CaptureResult
from vllmdiag.jobs.profile.diff.report import CpuDiff, GpuDiff
from vllmdiag.jobs.profile.diff_command import diff_run
from vllmdiag.jobs.profile.results import ProfileOutcome, ProfileRun, write_run
from vllmdiag.model.outcome import CellResult


def window_warnings(captures: Sequence[CaptureResult]) -> tuple[str, ...]:
    """vLLM sides whose profiler could not be given the same captured window."""
    how = {c.leg: c.notes for c in captures if c.backend is Backend.TORCH and c.ok and c.notes}
    if len(set(how.values())) > 1:
        detail = "; ".join(f"{side}: {' '.join(n)}" for side, n in how.items())
        return (f"the sides' profilers were switched on differently ({detail}): the captured "
                "windows may differ, compare per-step figures",)  # fmt: skip
    return ()


def outcome_of(
    run_dir: Path,
    captures: Sequence[CaptureResult],
    top: int,
    emit: Observer[Note],
    *,
    cells: Sequence[CellResult] = (),
    interrupted: bool = False,
    stopped_by: str | None = None,
) -> ProfileOutcome:
    """The end of a capture run: its warnings said, ``profile.json`` written, and (unless
    it was stopped) its first two sides diffed."""
    warnings = window_warnings(captures)
    for w in warnings:
        emit(Note("warning", w))
    run = ProfileRun(run_dir, tuple(captures), warnings)
    write_run(run)
    result = None if interrupted else diff_run(run, top)
    return ProfileOutcome(
        run,
        diff=result if isinstance(result, GpuDiff) else None,
        pyspy=result if isinstance(result, CpuDiff) else None,
        cells=tuple(cells),
        interrupted=interrupted,
        stopped_by=stopped_by,
    )
