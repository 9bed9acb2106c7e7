"""Triage one captured log, streaming it: the readers fed line by line, then the root cause
chosen from what they saw."""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from vllmdiag.errors import VllmdiagError
from vllmdiag.readers.triage.callers import frameworks_seen
from vllmdiag.readers.triage.catalogue import Catalogue
from vllmdiag.readers.triage.lines import normalise
from vllmdiag.readers.triage.reader import scan
from vllmdiag.readers.triage.rootcause import choose, failed_plugin
from vllmdiag.readers.triage.triaged import Evidence, LogTriage
from vllmdiag.readers.triage.watch import Watch

#: The name that stands for standard input on the command line.
STDIN = "-"


def triage_file(
    path: Path | str,
    catalogue: Catalogue | None = None,
    *,
    stream: BinaryIO | None = None,
    tool_dirs: Sequence[str] = (),
) -> LogTriage:
    """Triage one captured log (plain or gzip'd), streaming it: memory does not grow
    with its size. ``stream`` reads from an open binary stream instead of ``path`` (which
    then only names it, e.g. ``-`` for standard input). ``tool_dirs``: directories whose
    files are vllmdiag's own besides its package (the run directory it wrote)."""
    cat = catalogue or Catalogue.load()
    watch = Watch()
    source: Path | BinaryIO = stream if stream is not None else Path(path)
    try:
        info = scan(source, watch.feed, watch.busy)
    except OSError as exc:
        raise VllmdiagError(
            f"cannot read the log: {exc.strerror or exc}",
            where=str(path),
            hint="give the path of a captured log file, a run directory, or - for stdin",
        ) from None
    except zlib.error as exc:
        raise VllmdiagError(
            f"the log looks gzip'd but does not decompress: {exc}",
            where=str(path),
            hint="check the file is whole (gzip -t), or give the uncompressed log",
        ) from None
    tracebacks = watch.parser.finish()
    ev = Evidence(
        vllm_version=watch.version,
        ends_mid_line=info.ends_mid_line,
        finished=watch.finished,
        cli_error=watch.cli_error,
        relay=watch.relay,
        ending=tuple(normalise(raw.decode("utf-8", "replace"), n) for n, raw in info.tail),
        lines=info.lines,
        deaths=tuple(watch.deaths.finish()),
        tool_dirs=tuple(tool_dirs),
        wrapper=watch.wrapper,
        completed_at=watch.completed,
        framework=frameworks_seen(tracebacks) or watch.framework,
        vllm_change=watch.vllm_change,
        failed_plugin=failed_plugin(tracebacks),
        pip_causes=watch.pip.summary(),
        pip_blame=watch.pip.blame(),
    )
    triage = choose(tracebacks, cat, ev, str(path))
    if info.notes:  # how the log was read: a UTF-16 capture, a truncated gzip, ...
        note = "; ".join((*info.notes, *((triage.note,) if triage.note else ())))
        triage = dataclasses.replace(triage, note=note)
    return triage


def triage_many(paths: Sequence[Path], catalogue: Catalogue | None = None) -> list[LogTriage]:
    cat = catalogue or Catalogue.load()
    return [triage_file(p, cat) for p in paths]
