"""``vllmdiag study tables DIR``: every table regenerated from the results, never
transcribed: the batches are read, the canonical runs selected, the tables built and
written (atomically) as ``REPORT.md``, ``CANONICAL.md``, ``MANIFEST.md`` and
``tables/*.tsv``. Running it twice writes the same bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.errors import RunDirError
from vllmdiag.jobs.study import plan as splan
from vllmdiag.jobs.study import render
from vllmdiag.jobs.study.canonical import Selection, select
from vllmdiag.jobs.study.manifest import manifest
from vllmdiag.jobs.study.reading import StudyRecords, read_study
from vllmdiag.jobs.study.settings import expected, latest_locks
from vllmdiag.jobs.study.tables import StudyTables, build
from vllmdiag.printable import printable
from vllmdiag.services import atomic, redact

REPORT = "REPORT.md"
CANONICAL = "CANONICAL.md"
MANIFEST = "MANIFEST.md"
TABLES = "tables"


@dataclass(frozen=True)
class Generated:
    """What ``study tables`` wrote, and the tables themselves."""

    study_dir: Path
    files: tuple[str, ...]
    tables: StudyTables
    warnings: tuple[str, ...] = ()


def selection(records: StudyRecords) -> Selection:
    study = records.study
    envs = records.env_records()
    want = expected(study, latest_locks(envs))
    skipped = {s: why for s in want if (why := splan.skipped(study, s)) is not None}
    return select(
        records.measured,
        want,
        repeats=study.repeats,
        skipped=skipped,
        freezes={r.lock_hash: r.freeze for r in envs if r.lock_hash},
        batch_order=[b.name for b in records.batches],
    )


def study_tables(path: Path, warn: Callable[[str], None] | None = None) -> StudyTables:
    """The tables of the study at ``path``, nothing written."""
    records = read_study(path, warn)
    return build(records.study, selection(records))


def regenerate(path: Path, warn: Callable[[str], None] | None = None) -> Generated:
    records = read_study(path, warn)
    tables = build(records.study, selection(records))
    files: dict[str, str] = {
        REPORT: redact.shareable(render.report(tables, records.batches, records.warnings)),
        CANONICAL: redact.shareable(render.canonical(tables)),
        # The manifest keeps host names (where each batch ran is part of the record);
        # secrets and the home directory are masked as everywhere.
        MANIFEST: redact.paths(redact.text(manifest(records))),
        f"{TABLES}/coverage.tsv": redact.shareable(
            render.tsv(render.coverage_grid(tables.coverage), "coverage per leg")
        ),
    }
    for t in tables.tables:
        grid = render.metric_grid(t, notes_text=True)
        files[f"{TABLES}/{t.metric}.tsv"] = redact.shareable(render.tsv(grid, t.title))
    for name, text in files.items():
        _write(path / name, text)
    for stale in sorted((path / TABLES).glob("*.tsv")):
        if f"{TABLES}/{stale.name}" not in files:
            stale.unlink(missing_ok=True)  # a metric the study no longer has
    return Generated(path, tuple(files), tables, records.warnings)


def _write(file: Path, text: str) -> None:
    try:
        atomic.write_text(file, printable(text))
    except OSError as exc:
        raise RunDirError(
            f"cannot write {file.name}: {exc.strerror or exc}",
            where=str(file),
            hint="make the study directory writable, then: vllmdiag study tables DIR",
        ) from None
