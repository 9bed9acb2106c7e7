"""The study job: one batch of cells on the same runner, journal, hygiene and resume as
the matrix, then every table regenerated from all the study's results.

``vllmdiag study RECIPE --out DIR`` adds a batch to the study in ``DIR`` (all of it, or
the models / legs / workloads the filters name: a backfill); ``--resume`` continues a
batch that was interrupted, reusing every cell measured under the same settings.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from vllmdiag.errors import ConfigError, RunDirError, VllmdiagError
from vllmdiag.events import Note, Observer, ignore
from vllmdiag.jobs.study import plan as splan
from vllmdiag.jobs.study.generate import regenerate
from vllmdiag.jobs.study.gitstate import source_state
from vllmdiag.jobs.study.recipe import StudyRecipe
from vllmdiag.jobs.study.study_plan import check_commands
from vllmdiag.jobs.study.studydir import (
    BATCH_FILE,
    Attempt,
    BatchInfo,
    StudyDir,
    batch_cells,
    recipe_digest,
    write,
)
from vllmdiag.jobs.study.tables import StudyTables
from vllmdiag.model.outcome import CellResult
from vllmdiag.services import proc
from vllmdiag.services.envs.cache import EnvCache
from vllmdiag.spine.journal import host, utc_now
from vllmdiag.spine.measuring import measuring
from vllmdiag.spine.runner import Executor, LocalExecutor, RunOptions, run_cells
from vllmdiag.spine.runner.events import CellsEvent


@dataclass(frozen=True)
class StudyOptions:
    """``out``: the study directory (default ``RUNS_ROOT/<study name>``); ``batch``: the
    batch's name (default ``batch-N``), or the one to resume; ``filters``: part of the
    study (a backfill)."""

    out: Path | None = None
    runs_root: Path = Path("runs")
    batch: str | None = None
    resume: bool = False
    filters: splan.Filters = field(default_factory=splan.Filters)
    grace_s: float = proc.DEFAULT_GRACE_S
    allow_contaminated: bool = False
    executor: Executor = field(default_factory=LocalExecutor)
    cache: EnvCache = field(default_factory=EnvCache)
    wait: bool = False

    def study_dir(self, study: StudyRecipe) -> Path:
        return self.out if self.out is not None else self.runs_root / study.name


@dataclass(frozen=True)
class BatchOpened:
    study: str
    study_dir: Path
    batch: str
    batch_dir: Path
    cells: int
    resumed: bool


@dataclass(frozen=True)
class TablesWritten:
    study_dir: Path
    files: tuple[str, ...]


StudyEvent = CellsEvent | BatchOpened | TablesWritten


@dataclass(frozen=True)
class StudyReport:
    """One batch's cells and the study's tables after it. ``stopped_by``: the signal
    that interrupted the batch, if one did."""

    study: str
    question: str
    source: str | None
    study_dir: Path
    batch: str
    batch_dir: Path
    cells: tuple[CellResult, ...]
    tables: StudyTables
    files: tuple[str, ...]
    interrupted: bool = False
    stopped_by: str | None = None

    @property
    def cells_run(self) -> int:
        return sum(r.outcome.is_result for r in self.cells)


def run_study(
    study: StudyRecipe, options: StudyOptions, observer: Observer[StudyEvent] = ignore
) -> StudyReport:
    options.filters.check(study)
    sd = StudyDir.open(options.study_dir(study), study.name)
    existing = sd.batches(lambda text: observer(Note("warning", text)))
    filters = options.filters
    previous: BatchInfo | None = None
    if options.resume:
        found = sd.resume_batch(options.batch, existing)
        if not filters.empty and filters != found.info.filters:
            raise VllmdiagError(
                "a resumed batch runs the cells it was started with",
                where=str(found.path),
                hint="drop --model/--leg/--workload with --resume, or start a new batch",
            )
        batch_dir, previous, filters = found.path, found.info, found.info.filters
    else:
        batch_dir = sd.new_batch(options.batch, existing)
    cells = splan.expand(study, filters)
    if not cells:
        raise ConfigError(
            "no cell to run: the filters select nothing the study runs (or it skips them)",
            where=str(study.source) if study.source else None,
            hint="check --model/--leg/--workload against the study's names and 'skip'",
        )
    check_commands(study, cells)
    now = utc_now()
    attempt = Attempt(
        started=now,
        host=host(),
        resumed=options.resume,
        recipe=str(study.source or ""),
        recipe_digest=recipe_digest(study.source),
        source=source_state(study.recipe_dir),
    )
    info = BatchInfo(
        study=study.name,
        name=batch_dir.name,
        created=previous.created if previous else now,
        filters=filters,
        cells={**(previous.cells if previous else {}), **batch_cells(cells)},
        attempts=(*(previous.attempts if previous else ()), attempt),
    )
    sd.path.mkdir(parents=True, exist_ok=True)
    sd.write_study(study, attempt.recipe_digest, now)
    write(batch_dir / BATCH_FILE, info)
    observer(BatchOpened(study.name, sd.path, info.name, batch_dir, len(cells), options.resume))
    where = batch_dir.resolve()
    run_options = RunOptions(
        out=None if options.resume else where,
        resume=where if options.resume else None,
        runs_root=sd.path,
        grace_s=options.grace_s,
        allow_contaminated=options.allow_contaminated,
        executor=options.executor,
        cache=options.cache,
        job={"study": study.name, "batch": info.name},
    )
    with measuring(wait=options.wait, observer=observer, grace_s=options.grace_s) as stop:
        try:
            ran = run_cells(splan.as_recipe(study), splan.plans(cells), run_options, observer)
        except RunDirError as exc:  # its hint names the matrix command; say the study's
            raise RunDirError(
                exc.message,
                where=exc.where,
                hint="every cell that finished is intact; fix that, then: "
                + resume_command(str(study.source or "RECIPE"), sd.path, info.name),
            ) from None
    generated = regenerate(sd.path, lambda text: observer(Note("warning", text)))
    observer(TablesWritten(sd.path, generated.files))
    return StudyReport(
        study=study.name,
        question=study.question,
        source=str(study.source) if study.source else None,
        study_dir=sd.path,
        batch=info.name,
        batch_dir=batch_dir,
        cells=ran.results,
        tables=generated.tables,
        files=generated.files,
        interrupted=ran.interrupted,
        stopped_by=(stop.signame or "SIGINT") if ran.interrupted else None,
    )


def resume_command(recipe: str, study_dir: Path, batch: str) -> str:
    """The command that continues ``batch`` (for a hint, pasteable)."""
    return shlex.join(
        [
            "vllmdiag",
            "study",
            recipe,
            "--out",
            str(study_dir),
            "--resume",
            "--batch",
            batch,
        ]
    )
