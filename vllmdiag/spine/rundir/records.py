"""What a run directory holds, as typed values: the manifest the writer writes, and the
:class:`RunRecord` the reader gives back (the manifest, each cell with its result and
what the journal says of it, the legs' records, the verdict)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllmdiag.model.outcome import CellResult
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.stack import EnvRecord
from vllmdiag.model.verdict import Verdict
from vllmdiag.readers.hygiene.summary import HygieneSummary


@dataclass(frozen=True)
class NodeManifest:
    """One node of a run across nodes: its GPUs, its legs, their errors and hygiene."""

    id: str
    gpus: tuple[str, ...] | None
    envs: dict[str, EnvRecord] = field(default_factory=dict)
    env_errors: dict[str, str] = field(default_factory=dict)
    hygiene: HygieneSummary = field(default_factory=HygieneSummary)


@dataclass(frozen=True)
class Manifest:
    """``manifest.json``: the recipe as the run loaded it (its JSON form, by alias), each
    leg's record by key (as the first node that has it built it) and why the others
    could not be had, their hygiene, the executor; ``nodes`` only for a run across
    nodes."""

    recipe: dict[str, Any]
    envs: dict[str, EnvRecord] = field(default_factory=dict)
    env_errors: dict[str, str] = field(default_factory=dict)
    hygiene: HygieneSummary = field(default_factory=HygieneSummary)
    executor: str = ""
    nodes: dict[str, NodeManifest] | None = None

    @classmethod
    def of(cls, recipe: Recipe, **sections: Any) -> Manifest:
        return cls(recipe=recipe.model_dump(mode="json", by_alias=True), **sections)


@dataclass(frozen=True)
class JournalEntry:
    """One journal line that reads back, brought to the current schema. ``schema``: the
    one it was written with; ``fields``: everything but ``schema``, ``event``, ``ts``."""

    line: int
    event: str
    ts: str
    schema: Any
    fields: dict[str, Any]


@dataclass(frozen=True)
class RunStart:
    """A ``run_started`` record: a start (first, or a resume) of the run."""

    ts: str
    recipe: str
    source: str
    host: str
    run_id: str
    executor: str
    run_dir: str
    #: What the job added (absent from older journals: then None).
    job: dict[str, Any] | None


@dataclass(frozen=True)
class RunEnd:
    """A ``run_finished`` (``status``: complete, interrupted; "" where none was
    recorded) or ``run_refused`` record."""

    ts: str
    refused: bool
    status: str
    stopped_by: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class Spawn:
    """A cell's process group started (``node``: "" on this machine)."""

    cell: str
    pid: int
    start_ticks: int
    node: str


@dataclass(frozen=True)
class Ended:
    """Processes the run ended: ``cell``'s, left running when it ended, or (``cell``
    None) an earlier, killed run's."""

    cell: str | None
    pids: tuple[int, ...]


@dataclass(frozen=True)
class CellJournal:
    """What the journal says of one cell: the environment each start recorded (by reuse
    key, and the last), when it finished (the first time for each reuse key, and the
    last time), and the (outcome, reuse key) of the last result it recorded."""

    env_by_key: dict[str, dict[str, str]] = field(default_factory=dict)
    env: dict[str, str] | None = None
    finished_at: dict[str, str] = field(default_factory=dict)
    last_finished_at: str | None = None
    recorded: tuple[str, str] | None = None


@dataclass(frozen=True)
class CellRecord:
    """A cell of the run: its trusted result (None: none that can be trusted) and what
    the journal says of it."""

    id: str
    result: CellResult | None
    journal: CellJournal = field(default_factory=CellJournal)


@dataclass(frozen=True)
class RunRecord:
    """A run directory read back. What could not be read is left out, with a warning in
    ``warnings``; ``recipe`` is the manifest's recipe where it loads; ``envs`` the legs'
    records (``envs/<key>.json``) by key."""

    path: Path
    journal: tuple[JournalEntry, ...]
    starts: tuple[RunStart, ...]
    ends: tuple[RunEnd, ...]
    spawns: tuple[Spawn, ...]
    ended: tuple[Ended, ...]
    cells: dict[str, CellRecord]
    manifest: Manifest | None
    recipe: Recipe | None
    envs: dict[str, EnvRecord]
    verdict: Verdict | None
    warnings: tuple[str, ...] = ()

    def results(self) -> dict[str, CellResult]:
        """Every trusted result, by cell id."""
        return {i: c.result for i, c in self.cells.items() if c.result is not None}

    @property
    def end(self) -> RunEnd | None:
        """The last end recorded (None: still running, or killed)."""
        return self.ends[-1] if self.ends else None
