"""Many logs → root-cause groups: the "two root causes, not three" table, generated."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.triage.catalogue import Catalogue
from vllmdiag.triage.model import Attribution, Group, LogTriage

LOG_SUFFIXES = (".log", ".out", ".err", ".txt")


def log_files(paths: Sequence[Path]) -> list[Path]:
    """Files as given; directories expand to the logs under them, sorted."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(LOG_SUFFIXES))
            if not found:
                raise VllmdiagError(
                    f"no log files under {p}",
                    where=str(p),
                    hint=f"a run directory holds files ending in {', '.join(LOG_SUFFIXES)}",
                )
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise VllmdiagError(
                "no such file or directory",
                where=str(p),
                hint="give a log file, several, or a run directory",
            )
    return out


def group(logs: Sequence[LogTriage]) -> Attribution:
    """Group triaged logs: by catalogue entry where known, else by signature."""
    buckets: dict[str, list[LogTriage]] = {}
    unattributed: list[tuple[str, str]] = []
    for log in logs:
        rc = log.root_cause
        if rc is None:
            unattributed.append((log.path, log.note or "no root cause found"))
            continue
        key = f"known:{rc.known}" if rc.known else f"sig:{rc.signature}"
        buckets.setdefault(key, []).append(log)
    groups = []
    for members in buckets.values():
        first = members[0].root_cause
        assert first is not None
        sigs = tuple(dict.fromkeys(m.root_cause.signature for m in members if m.root_cause))
        groups.append(
            Group(
                signature=first.signature,
                known=first.known,
                members=tuple(m.path for m in members),
                next_step=first.next_step,
                meaning=first.meaning,
                signatures=sigs,
            )
        )
    groups.sort(key=lambda g: (-len(g.members), g.signature))
    return Attribution(tuple(groups), tuple(unattributed), tuple(logs))


def attribute(paths: Sequence[Path], catalogue: Catalogue | None = None) -> Attribution:
    """Triage every log under ``paths`` and group them by root cause."""
    from vllmdiag.triage import triage_file

    cat = catalogue or Catalogue.load()
    return group([triage_file(p, cat) for p in log_files(paths)])
