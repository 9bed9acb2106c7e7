"""A study directory: the study's current settings and its batches.

::

    DIR/study.json              the study recipe as last run (its current settings)
    DIR/batches/<name>/         one run directory per batch (a first sweep, a backfill,
                                ...), plus batch.json: which (leg, model, workload,
                                repeat) each cell is, the filters, and each attempt's
                                start, host and recipe-directory state
    DIR/REPORT.md CANONICAL.md MANIFEST.md tables/*.tsv   generated from the results

Everything is written atomically and through :mod:`vllmdiag.services.redact`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllmdiag import codec
from vllmdiag.errors import RunDirError, VllmdiagError
from vllmdiag.jobs.study.gitstate import SourceState
from vllmdiag.jobs.study.plan import Filters, StudyCell
from vllmdiag.jobs.study.recipe import StudyRecipe
from vllmdiag.model.recipe import check_name
from vllmdiag.services import atomic, redact
from vllmdiag.spine.journal import EVENTS

SCHEMA = 1
STUDY_FILE = "study.json"
BATCHES = "batches"
BATCH_FILE = "batch.json"


@dataclass(frozen=True)
class BatchCell:
    """What a cell of a batch is: ``runs_on`` names the leg it ran on (the study leg,
    or the one derived from it by the model's pins)."""

    leg: str
    model: str
    workload: str
    repeat: int
    runs_on: str


@dataclass(frozen=True)
class Attempt:
    """One start of a batch (the first, or a resume)."""

    started: str
    host: str
    resumed: bool
    recipe: str
    recipe_digest: str
    source: SourceState


@dataclass(frozen=True)
class BatchInfo:
    study: str
    name: str
    created: str
    filters: Filters
    cells: dict[str, BatchCell]
    attempts: tuple[Attempt, ...] = ()
    schema: int = SCHEMA


@dataclass(frozen=True)
class StudyFile:
    """The study as last run: what "the study's current settings" means."""

    study: StudyRecipe
    digest: str
    updated: str
    schema: int = SCHEMA


@dataclass(frozen=True)
class Batch:
    path: Path
    info: BatchInfo


@dataclass
class StudyDir:
    path: Path
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, path: Path, study: str | None = None) -> StudyDir:
        """An existing study directory (of ``study``, when given) or a new one."""
        if (path / EVENTS).exists():
            raise VllmdiagError(
                "this is a matrix run directory, not a study directory",
                where=str(path),
                hint="give the study its own directory with --out",
            )
        if path.exists() and not path.is_dir():
            raise RunDirError(
                "the study directory is an existing file",
                where=str(path),
                hint="give --out a directory path, new or existing",
            )
        found = cls(path)
        current = found.study_file(required=False)
        if current is not None and study is not None and current.study.name != study:
            raise VllmdiagError(
                f"this directory holds study {current.study.name!r}, not {study!r}",
                where=str(path / STUDY_FILE),
                hint="a study directory holds one study: choose another --out",
            )
        fresh = current is None and study is not None and path.exists()
        if fresh and any(path.iterdir()) and not (path / BATCHES).is_dir():
            raise VllmdiagError(
                "the directory is not empty and holds no study",
                where=str(path),
                hint="give --out a new or empty directory, or an existing study's",
            )
        return found

    def study_file(self, *, required: bool = True) -> StudyFile | None:
        file = self.path / STUDY_FILE
        if not file.exists():
            if required:
                raise VllmdiagError(
                    "not a study directory (no study.json)",
                    where=str(self.path),
                    hint="give the directory 'vllmdiag study RECIPE --out DIR' wrote",
                )
            return None
        found: StudyFile = _read(file, StudyFile, "the study's settings")
        return found

    def write_study(self, study: StudyRecipe, digest: str, now: str) -> None:
        write(self.path / STUDY_FILE, StudyFile(study, digest, now))

    def batches(self, warn: Callable[[str], None] | None = None) -> list[Batch]:
        """Every batch, oldest first; one whose batch.json cannot be read is skipped
        with a warning (its results cannot be placed in the study)."""
        out = []
        root = self.path / BATCHES
        for sub in sorted(root.iterdir()) if root.is_dir() else []:
            file = sub / BATCH_FILE
            if not file.exists():
                continue
            try:
                info = _read(file, BatchInfo, "a batch record")
            except VllmdiagError as exc:
                text = f"{exc.where}: {exc.message}; its results are left out"
                self.warnings.append(text)
                if warn is not None:
                    warn(text)
                continue
            out.append(Batch(sub, info))
        return sorted(out, key=lambda b: (b.info.created, b.info.name))

    def new_batch(self, name: str | None, existing: list[Batch]) -> Path:
        if name is None:
            taken = {b.path.name for b in existing}
            n = len(existing) + 1
            while f"batch-{n}" in taken or (self.path / BATCHES / f"batch-{n}").exists():
                n += 1
            name = f"batch-{n}"
        _check_batch_name(name)
        path = self.path / BATCHES / name
        if (path / EVENTS).exists():
            raise VllmdiagError(
                f"batch {name!r} already ran in this study",
                where=str(path),
                hint=f"continue it with --resume --batch {name}, or name a new one",
            )
        return path

    def resume_batch(self, name: str | None, existing: list[Batch]) -> Batch:
        if not existing:
            raise VllmdiagError(
                "this study has no batch to resume",
                where=str(self.path),
                hint="start one without --resume",
            )
        if name is None:
            return existing[-1]
        for b in existing:
            if b.path.name == name:
                return b
        raise VllmdiagError(
            f"no batch {name!r} in this study",
            where=str(self.path / BATCHES),
            hint="batches: " + ", ".join(b.path.name for b in existing),
        )


def batch_cells(cells: list[StudyCell]) -> dict[str, BatchCell]:
    return {
        c.plan.id: BatchCell(
            c.slot.leg, c.slot.model, c.slot.workload, c.plan.repeat, c.plan.leg.name
        )
        for c in cells
    }


def recipe_digest(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return ""


def write(path: Path, value: object) -> None:
    """A typed value as JSON, atomically and redacted."""
    data: Any = codec.dump(value)
    try:
        atomic.write_json(path, redact.data(data))
    except OSError as exc:
        raise RunDirError(
            f"cannot write {path.name}: {exc.strerror or exc}",
            where=str(path),
            hint="choose a writable place with --out",
        ) from None


def _read(file: Path, cls: type[Any], what: str) -> Any:
    try:
        data = atomic.read_json(file)
        return codec.load(cls, data)
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        first = str(exc).splitlines()[0]
        raise VllmdiagError(
            f"cannot read {what}: {first}",
            where=str(file),
            hint="it is written by vllmdiag study; restore it or remove the batch",
        ) from None


def _check_batch_name(name: str) -> None:
    try:
        check_name("batch", name)
    except ValueError as exc:
        raise VllmdiagError(str(exc), hint="e.g. --batch backfill-gemma") from None
