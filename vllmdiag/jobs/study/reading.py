"""Reading a study directory back: every batch's results, the settings each cell was
measured under, the legs and their hygiene, and when and where each batch ran.

Values come only from the batches' ``result.json`` files; the settings a cell ran under
come from its own result (leg, lock hash, command) and from its batch journal's
``cell_started`` line of the same reuse key (the environment overlay). A file that
cannot be read is skipped with a warning, never misread.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.jobs.study.measured import CellSettings, Measured
from vllmdiag.jobs.study.plan import Slot
from vllmdiag.jobs.study.recipe import StudyRecipe
from vllmdiag.jobs.study.settings import normalise_argv
from vllmdiag.jobs.study.studydir import Batch, BatchInfo, StudyDir
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.stack import EnvRecord
from vllmdiag.readers.hygiene.findings import DoctorReport
from vllmdiag.spine.rundir import RunEnd, layout, read_run


@dataclass(frozen=True)
class BatchRecord:
    """One batch as its files tell it. ``status``: complete, interrupted, refused (a
    contaminated leg), or running (no end recorded: still running, or killed)."""

    name: str
    path: str
    info: BatchInfo
    run_ids: tuple[str, ...]
    hosts: tuple[str, ...]
    started: str
    finished: str | None
    status: str
    executor: str
    envs: dict[str, EnvRecord]
    hygiene: dict[str, DoctorReport]
    outcomes: dict[str, int]


@dataclass(frozen=True)
class StudyRecords:
    study: StudyRecipe
    digest: str
    batches: tuple[BatchRecord, ...]
    measured: tuple[Measured, ...]
    warnings: tuple[str, ...] = ()

    def env_records(self) -> list[EnvRecord]:
        """Every leg record, oldest batch first."""
        return [r for b in self.batches for r in b.envs.values()]


def read_study(path: Path, warn: Callable[[str], None] | None = None) -> StudyRecords:
    warnings: list[str] = []

    def note(text: str) -> None:
        warnings.append(text)
        if warn is not None:
            warn(text)

    sd = StudyDir(path)
    current = sd.study_file()
    assert current is not None
    batches, measured = [], []
    for batch in sd.batches(note):
        record, cells = _read_batch(batch, note)
        batches.append(record)
        measured += cells
    return StudyRecords(
        current.study, current.digest, tuple(batches), tuple(measured), tuple(warnings)
    )


def _read_batch(batch: Batch, warn: Callable[[str], None]) -> tuple[BatchRecord, list[Measured]]:
    info = batch.info
    run = read_run(batch.path, warn)
    starts = run.starts
    envs = run.envs
    hygiene = dict(run.manifest.hygiene.per_leg) if run.manifest is not None else {}
    out_roots = {s.run_dir for s in starts} | {str(batch.path), str(batch.path.resolve())}
    recipe_dirs = {str(Path(a.recipe).parent) for a in info.attempts}
    # Legs that share one environment (two names, one spec) share one record: every
    # interpreter of the batch is a leg's ``{python}``.
    pythons = sorted({r.python for r in envs.values()})
    started_at = starts[0].ts if starts else info.created
    results = run.results()
    measured = []
    for cell_id, result in results.items():
        where = info.cells.get(cell_id)
        if where is None:
            here = layout.cell_dir(batch.path, cell_id)
            warn(f"{here}: not a cell of batch {info.name}; left out")
            continue
        journal = run.cells[cell_id].journal
        argv = normalise_argv(
            result.argv,
            cell=cell_id,
            out_dirs=[str(layout.cell_out(Path(root), cell_id)) for root in out_roots if root],
            pythons=pythons,
            recipe_dirs=recipe_dirs,
        )
        settings = CellSettings(
            result.leg, result.lock_hash, argv, journal.env_by_key.get(result.reuse_key)
        )
        report = hygiene.get(result.leg)
        measured.append(
            Measured(
                batch=info.name,
                cell=cell_id,
                slot=Slot(where.leg, where.model, where.workload),
                repeat=result.repeat,
                outcome=result.outcome,
                settings=settings,
                finished=journal.finished_at.get(
                    result.reuse_key, journal.last_finished_at or started_at
                ),
                metrics=dict(result.metrics),
                why=why(result),
                contaminated=tuple(report.reasons()) if report else (),
            )
        )
    end = run.end
    status = "running" if end is None else _status(end)
    record = BatchRecord(
        name=info.name,
        path=str(batch.path),
        info=info,
        run_ids=tuple(dict.fromkeys(s.run_id for s in starts)),
        hosts=tuple(dict.fromkeys(s.host for s in starts)),
        started=started_at,
        finished=end.ts if end is not None else None,
        status=status if starts else "not started",
        executor=starts[-1].executor if starts else "",
        envs=envs,
        hygiene=hygiene,
        outcomes=dict(Counter(r.outcome.value for r in results.values())),
    )
    return record, measured


def _status(end: RunEnd) -> str:
    if end.refused:
        return f"refused: {end.reason}"
    return end.status or "complete"


def why(result: CellResult) -> str:
    """A cell that did not pass, in one line: its root cause where triage found one, and
    whose fault triage says it is."""
    if result.outcome is Outcome.PASS:
        return ""
    cause = result.root_cause
    whose = f" [whose fault: {cause.origin}]" if cause is not None and cause.origin else ""
    if cause is not None and cause.type:
        return f"{cause.type}: {cause.message or ''}".strip().rstrip(":")[:300] + whose
    if cause is not None and cause.evidence == "death-line" and cause.message:
        return cause.message[:300] + whose
    first = result.reason.splitlines()[0] if result.reason else ""
    return first[:300]
