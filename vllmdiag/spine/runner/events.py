"""What running cells emits: one union for every job that runs cells (matrix, bisect,
profile, study). The journal records each (as ``run_started``, ``cell_finished``, ...),
the live view shows them; progress ticks are shown, never journaled."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from vllmdiag.events import Note
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.stack import EnvRecord
from vllmdiag.readers.hygiene.findings import DoctorReport
from vllmdiag.services.envs.cache import EnvEvent


@dataclass(frozen=True)
class RunStarted:
    recipe: str
    source: str
    run_dir: Path
    cells: int
    resumed: bool
    host: str
    executor: str
    run_id: str
    #: What the job adds (a bisect step's pin, a profile's sides, ...).
    job: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LeftoversEnded:
    """Processes an earlier, killed run left running, now ended: of this directory (on
    resume) or of any run on this node (when the job took the node lock; ``tags`` then
    names their cells)."""

    pids: tuple[int, ...]
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class EnvReady:
    record: EnvRecord
    #: The node it was built on, in a run across nodes ("" on this machine alone).
    node: str = ""


@dataclass(frozen=True)
class EnvFailed:
    leg: str
    key: str
    error: str
    node: str = ""


@dataclass(frozen=True)
class HygieneChecked:
    legs: tuple[DoctorReport, ...]
    contaminated: bool
    node: str = ""


@dataclass(frozen=True)
class RunRefused:
    reason: str


@dataclass(frozen=True)
class CellStarted:
    index: int
    total: int
    id: str
    arm: str
    workload: str
    repeat: int
    leg: str
    argv: tuple[str, ...]
    env: dict[str, str]
    reuse_key: str
    lock_hash: str
    log: Path
    #: Where it runs, in a run across nodes ("" on this machine alone), and the GPUs it
    #: was given as its CUDA_VISIBLE_DEVICES (None: the node's own setting).
    node: str = ""
    gpus: str | None = None


@dataclass(frozen=True)
class CellSpawned:
    """The cell's process exists: its pid is also its process group and session id."""

    id: str
    pid: int
    pgid: int
    sid: int
    start_ticks: int | None
    #: The node the pid lives on ("" for this machine: only those are ended on resume
    #: by their session; a node ends its own by their tag).
    node: str = ""


@dataclass(frozen=True)
class CellSwept:
    """Processes the cell started (daemons, escapees) still running when it ended, ended
    then."""

    id: str
    pids: tuple[int, ...]


@dataclass(frozen=True)
class CellTick:
    journaled: ClassVar[bool] = False

    id: str
    elapsed_s: float
    log: Path


@dataclass(frozen=True)
class CellReused:
    """A finished result of an earlier run of this directory, reused on resume."""

    index: int
    total: int
    id: str
    result: CellResult


@dataclass(frozen=True)
class CellFinished:
    index: int
    total: int
    id: str
    result: CellResult


@dataclass(frozen=True)
class CellInterrupted:
    id: str
    elapsed_s: float


@dataclass(frozen=True)
class RunFinished:
    status: str  # "complete" | "interrupted"
    stopped_by: str | None = None


CellsEvent = (
    RunStarted
    | LeftoversEnded
    | EnvEvent
    | EnvReady
    | EnvFailed
    | HygieneChecked
    | RunRefused
    | Note
    | CellStarted
    | CellSpawned
    | CellSwept
    | CellTick
    | CellReused
    | CellFinished
    | CellInterrupted
    | RunFinished
)
