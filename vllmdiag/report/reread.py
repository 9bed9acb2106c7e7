"""Failing cells' root causes read again from their logs with the triage that runs now.

A run directory keeps the root cause as triage read it when the cell ended; a later
triage may know better whose fault it is (a check of the user's settings that an older
reading called vLLM's) and what to do next. Where the cell's log is a file inside the run
directory and the same exception is read from it again (the same lines), whose fault it
is and the catalogue's reading of it are taken from the new reading; what the exception
was (type, message, signature, frames) stays as recorded. Else the record stands.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.runner.readers import RunReaders


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
    """``cell`` with its root cause read again from its log (failing cells only)."""
    if cell.outcome not in (Outcome.FAIL, Outcome.TIMEOUT):
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
    return dataclasses.replace(cell, root_cause=cause)
