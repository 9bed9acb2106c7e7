"""Many logs → root-cause groups: the "two root causes, not three" table, generated."""

from __future__ import annotations

import dataclasses
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.model.outcome import Outcome
from vllmdiag.readers.triage.catalogue import Catalogue
from vllmdiag.readers.triage.triage_log import triage_file
from vllmdiag.readers.triage.triaged import Attribution, Group, LogTriage, Unattributed
from vllmdiag.services.config.source import did_you_mean, kind_of, probe

LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
SKIP_NAMES = frozenset({"summary.txt"})


def labelled_logs(paths: Sequence[Path]) -> list[tuple[Path, str]]:
    """(file, label) for every log to triage. A file is its own label. A vllmdiag run
    directory gives each cell's ``cells/<id>/log.txt`` labelled by the cell id (earlier
    attempts' ``log.previous.txt`` are not the cell's outcome); any other directory gives
    the log files under it, labelled by their path inside it."""
    out: list[tuple[Path, str]] = []
    for p in paths:
        st = probe(p, what="log")
        if st is None:
            raise VllmdiagError(
                "no such file or directory",
                where=str(p),
                hint=did_you_mean(p, suffixes=LOG_SUFFIXES)
                or "give a log file, several, or a run directory",
            )
        if stat.S_ISDIR(st.st_mode):
            out += _logs_under(p)
        elif stat.S_ISREG(st.st_mode):
            out.append((p, str(p)))
        else:  # /dev/zero would be read forever, a FIFO would block
            raise VllmdiagError(
                f"this is {kind_of(st.st_mode)}, not a log file",
                where=str(p),
                hint="save the output to a file first (COMMAND > run.log 2>&1) and give "
                "that, several, or a run directory",
            )
    return out


def _logs_under(p: Path) -> list[tuple[Path, str]]:
    if (p / "cells").is_dir():
        found = [(f, f.parent.name) for f in sorted(p.glob("cells/*/log.txt"))]
    else:
        found = [
            (f, str(f.relative_to(p)))
            for f in sorted(p.rglob("*"))
            if f.is_file()
            and f.name.endswith(LOG_SUFFIXES)
            and ".previous." not in f.name
            and f.name not in SKIP_NAMES
        ]
    if not found:
        raise VllmdiagError(
            f"no log files under {p}",
            where=str(p),
            hint=f"a run directory holds files ending in {', '.join(LOG_SUFFIXES)}",
        )
    return found


#: The outcome a run recorded for the cell whose log a path is (None: not a cell's log,
#: or none recorded: then the log alone decides); the run directory's reader gives it.
Recorded = Callable[[Path], Outcome | None]


def with_outcome(log: LogTriage, outcome: Outcome | None) -> LogTriage:
    """``log`` with the cell's recorded outcome attached, where there is one."""
    return dataclasses.replace(log, outcome=outcome) if outcome else log


def log_files(paths: Sequence[Path]) -> list[Path]:
    """The files :func:`labelled_logs` picks, without their labels."""
    return [f for f, _ in labelled_logs(paths)]


def group(logs: Sequence[LogTriage], labels: Mapping[str, str] | None = None) -> Attribution:
    """Group triaged logs: by catalogue entry where known, else by signature. Members are
    named by ``labels[log.path]`` where given, else by the log's path. A cell the run
    recorded as passed is listed as passed, whatever its log shows."""
    name = dict(labels or {})
    buckets: dict[str, list[LogTriage]] = {}
    unattributed: list[Unattributed] = []
    passed: list[str] = []
    for log in logs:
        if log.passed:
            passed.append(name.get(log.path, log.path))
            continue
        rc = log.root_cause
        if rc is None:
            unattributed.append(
                Unattributed(name.get(log.path, log.path), log.note or "no root cause found")
            )
            continue
        key = f"known:{rc.known}" if rc.known else f"sig:{rc.signature}"
        buckets.setdefault(key, []).append(log)
    groups = []
    for members in buckets.values():
        first = members[0].root_cause
        assert first is not None
        sigs = tuple(dict.fromkeys(m.root_cause.signature or "" for m in members if m.root_cause))
        groups.append(
            Group(
                signature=first.signature or "",
                known=first.known,
                members=tuple(name.get(m.path, m.path) for m in members),
                next_step=first.next_step,
                meaning=first.meaning,
                signatures=sigs,
                origin=first.origin,
                package=first.package,
                why=first.why or "",
            )
        )
    groups.sort(key=lambda g: (-len(g.members), g.signature))
    return Attribution(tuple(groups), tuple(unattributed), tuple(logs), tuple(passed))


def attribute(
    paths: Sequence[Path], catalogue: Catalogue | None = None, recorded: Recorded | None = None
) -> Attribution:
    """Triage every log under ``paths`` and group them by root cause (``recorded``: what
    a run recorded of each cell, so that a cell it recorded as passed is listed as
    passed)."""
    cat = catalogue or Catalogue.load()
    found = labelled_logs(paths)
    logs = [with_outcome(triage_file(f, cat), recorded(f) if recorded else None) for f, _ in found]
    return group(logs, {str(f): label for f, label in found})
