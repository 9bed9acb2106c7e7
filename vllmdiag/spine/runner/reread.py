"""Finished cells judged again from their logs with the triage that runs now.

A run directory keeps the root cause as triage read it when the cell ended; a later
triage may know better whose fault it is (a check of the user's settings that an older
reading called vLLM's, or vllmdiag's own) and what to do next. Where the cell's log is a
file inside the run directory and the same exception is read from it again (the same
lines), whose fault it is and the catalogue's reading of it are taken from the new
reading; what the exception was (type, message, signature, frames) stays as recorded.
Else the record stands.

A cell whose outcome was read from its log follows the new reading: a failure whose
root cause now lies in vllmdiag's own code is an ERROR, and one an older reading called
vllmdiag's own that lies elsewhere is a FAIL again (the judge's rule, ``runner/judge``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.spine.runner.judge import tool_failure
from vllmdiag.spine.runner.readers import RunReaders


def cell_log(run: Path, cell: CellResult) -> Path | None:
    """The cell's log, if it is a regular file inside the run directory (a result that
    names a file elsewhere is not followed)."""
    root = run.resolve()
    named = Path(cell.log) if cell.log else root / "cells" / cell.id / "log.txt"
    try:
        log = named.resolve()
        inside = log.is_relative_to(root) and log.is_file()
    except OSError:
        return None
    return log if inside else None


def reread(run: Path, cell: CellResult) -> CellResult:
    """``cell`` with its root cause read again from its log (cells whose outcome came
    from reading it: failures, timeouts, and errors that were vllmdiag's own failure)."""
    if not _read_from_log(cell):
        return cell
    log = cell_log(run, cell)
    if log is None:
        return cell
    new = RunReaders().root_cause(log, (str(run.resolve()),))
    old = cell.root_cause
    if new.reader_error or not new.signature or old is None:
        return cell
    if old.lines is not None and new.lines != old.lines:
        return cell
    cause = dataclasses.replace(
        old,
        origin=new.origin,
        package=new.package,
        why=new.why,
        raised_in=new.raised_in,
        known=new.known,
        next_step=new.next_step,
        advice=new.advice,
    )
    if cell.outcome is Outcome.TIMEOUT:
        return dataclasses.replace(cell, root_cause=cause)
    if cause.is_tool_error:
        return dataclasses.replace(
            cell, outcome=Outcome.ERROR, reason=tool_failure(cause), root_cause=cause
        )
    return dataclasses.replace(
        cell, outcome=Outcome.FAIL, reason=f"exit status {cell.rc}", root_cause=cause
    )


def _read_from_log(cell: CellResult) -> bool:
    if cell.outcome in (Outcome.FAIL, Outcome.TIMEOUT):
        return True
    root = cell.root_cause
    tool = cell.outcome is Outcome.ERROR and root is not None and root.is_tool_error
    return tool and cell.rc not in (0, None)
