"""A timed-out cell's root cause: where it hung, from its stack dump and its log."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from vllmdiag import codec
from vllmdiag.model.hang import HangReport
from vllmdiag.model.outcome import CauseSummary
from vllmdiag.model.startup import StartupTimeline
from vllmdiag.services import atomic
from vllmdiag.spine.runner import hangdump


def hang_report(cell_dir: Path, timeout_s: float, startup: StartupTimeline | None) -> HangReport:
    """The dump's report (or, where none was written, what the log alone says), with the
    last start-up phase the log got through."""
    report = hangdump.load(cell_dir)
    if report is None:
        report = HangReport(
            timeout_s=timeout_s,
            killed_at="",
            silent_s=startup.silent_s if startup else None,
            processes=(),
            notes=("no stack dump was written (see the cell's hang/ directory)",),
        )
    last = startup.last_completed() if startup else None
    if last is None:
        return report
    took = last.reported_s if last.reported_s is not None else last.seconds
    return replace(report, after_phase=last.name, after_s=took)


def hang_cause(report: HangReport, found: CauseSummary | None) -> CauseSummary:
    """The cell's root cause: an exception the log shows stays (the hang is on the
    result beside it); with none in view, the hang itself."""
    if found is not None and found.type is not None:
        return found
    stuck = report.stuck
    where = ""
    top = None
    if stuck is not None:
        top = stuck.frames[0] if stuck.frames else stuck.innermost
        if top is not None:
            where = f" in {top.function} ({Path(top.file).name})"
    why = (
        "a hang names no culprit by itself: who must act depends on what the stuck frames wait for"
        if top is not None
        else "a hang whose stacks could not be dumped: nothing says where it waited"
    )
    phase = f" after {report.after_phase}" if report.after_phase else ""
    return CauseSummary(
        type="Timeout",
        message=report.describe(),
        process=stuck.title if stuck else None,
        signature=f"Timeout{phase}{where}",
        origin="unknown",
        why=why,
        raised_in=top.package if top is not None else None,
        evidence="hang-dump" if stuck is not None else "timeout",
        frames=tuple(str(f) for f in stuck.frames) if stuck else (),
        reader_error=found.reader_error if found else None,
    )


def recorded_hang(log: Path) -> HangReport | None:
    """Where the cell whose log this is hung, as its run recorded it (the ``hang`` of
    the ``result.json`` beside ``log.txt``), or None."""
    if log.name != "log.txt":
        return None
    try:
        data = atomic.read_json(log.parent / "result.json")
        hang = data.get("hang") if isinstance(data, dict) else None
        return codec.load(HangReport, hang) if hang is not None else None
    except (OSError, ValueError):
        return None
