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
from typing import Any

from vllmdiag import codec
from vllmdiag.jobs.study.measured import CellSettings, Measured
from vllmdiag.jobs.study.plan import Slot
from vllmdiag.jobs.study.recipe import StudyRecipe
from vllmdiag.jobs.study.settings import normalise_argv
from vllmdiag.jobs.study.studydir import Batch, BatchInfo, StudyDir
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.stack import EnvRecord
from vllmdiag.readers.hygiene.findings import DoctorReport
from vllmdiag.readers.legs.env_record import env_record
from vllmdiag.services import atomic
from vllmdiag.spine.journal import EVENTS, RunDir
from vllmdiag.spine.runner.readers import HygieneSummary


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
    run = RunDir(batch.path, warn)
    events = run.events() if (batch.path / EVENTS).is_file() else []
    starts = [e for e in events if e.get("event") == "run_started"]
    ends = [e for e in events if e.get("event") in ("run_finished", "run_refused")]
    envs = _envs(batch.path, warn)
    hygiene = _hygiene(batch.path, warn)
    env_of: dict[tuple[str, str], dict[str, str]] = {}
    done_at: dict[tuple[str, str], str] = {}
    for e in events:
        # Schema 1 named the reuse key "fingerprint" and kept no result in cell_finished.
        reuse = e.get("reuse_key", e.get("fingerprint"))
        if isinstance(e.get("result"), dict):
            reuse = e["result"].get("reuse_key")
        key = (str(e.get("id")), str(reuse))
        if e.get("event") == "cell_started" and isinstance(e.get("env"), dict):
            env_of[key] = {str(k): str(v) for k, v in e["env"].items()}
        elif e.get("event") == "cell_finished":
            done_at.setdefault(key, str(e.get("ts", "")))
            done_at[(key[0], "")] = str(e.get("ts", ""))  # the cell's last finish
    results = run.finished() if (batch.path / "cells").is_dir() else {}
    out_roots = {str(e.get("run_dir", "")) for e in starts} | {
        str(batch.path),
        str(batch.path.resolve()),
    }
    recipe_dirs = {str(Path(a.recipe).parent) for a in info.attempts}
    # Legs that share one environment (two names, one spec) share one record: every
    # interpreter of the batch is a leg's ``{python}``.
    pythons = sorted({r.python for r in envs.values()})
    started_at = str(starts[0].get("ts", "")) if starts else info.created
    measured = []
    for cell_id, result in results.items():
        where = info.cells.get(cell_id)
        if where is None:
            warn(f"{batch.path / 'cells' / cell_id}: not a cell of batch {info.name}; left out")
            continue
        argv = normalise_argv(
            result.argv,
            cell=cell_id,
            out_dirs=[f"{root}/cells/{cell_id}/out" for root in out_roots if root],
            pythons=pythons,
            recipe_dirs=recipe_dirs,
        )
        settings = CellSettings(
            result.leg, result.lock_hash, argv, env_of.get((cell_id, result.reuse_key))
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
                finished=done_at.get(
                    (cell_id, result.reuse_key), done_at.get((cell_id, ""), started_at)
                ),
                metrics=dict(result.metrics),
                why=why(result),
                contaminated=tuple(report.reasons()) if report else (),
            )
        )
    end = ends[-1] if ends else None
    status = "running" if end is None else _status(end)
    record = BatchRecord(
        name=info.name,
        path=str(batch.path),
        info=info,
        run_ids=tuple(dict.fromkeys(str(e.get("run_id", "")) for e in starts)),
        hosts=tuple(dict.fromkeys(str(e.get("host", "")) for e in starts)),
        started=started_at,
        finished=str(end.get("ts")) if end is not None else None,
        status=status if starts else "not started",
        executor=str(starts[-1].get("executor", "")) if starts else "",
        envs=envs,
        hygiene=hygiene,
        outcomes=dict(Counter(r.outcome.value for r in results.values())),
    )
    return record, measured


def _status(end: dict[str, Any]) -> str:
    if end.get("event") == "run_refused":
        return f"refused: {end.get('reason', '')}"
    return str(end.get("status", "complete"))


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


def _envs(path: Path, warn: Callable[[str], None]) -> dict[str, EnvRecord]:
    out = {}
    for file in sorted((path / "envs").glob("*.json")):
        try:
            record = env_record(atomic.read_json(file))
        except (OSError, ValueError, TypeError) as exc:
            warn(f"{file}: not a leg record ({str(exc).splitlines()[0]}); left out")
            continue
        out[record.key] = record
    return out


def _hygiene(path: Path, warn: Callable[[str], None]) -> dict[str, DoctorReport]:
    """Each leg's doctor report (schema 1 kept them by leg name, without ``per_leg``)."""
    file = path / "manifest.json"
    if not file.exists():
        return {}
    try:
        found = atomic.read_json(file).get("hygiene", {})
        per_leg = found.get("per_leg", found) if isinstance(found, dict) else {}
        summary = codec.load(HygieneSummary, {"per_leg": per_leg})
    except (OSError, ValueError, AttributeError) as exc:
        warn(f"{file}: hygiene findings unreadable ({str(exc).splitlines()[0]}); left out")
        return {}
    return dict(summary.per_leg)
