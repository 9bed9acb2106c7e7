"""Progress events a job emits. The Rich live view is one observer, ``--json`` another."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.envs.cache import EnvEvent
from vllmdiag.model.outcome import CellResult


@dataclass(frozen=True)
class RunStarted:
    run_dir: Path
    cells: int
    resumed: bool


@dataclass(frozen=True)
class CellStarted:
    index: int
    total: int
    cell_id: str
    log: Path


@dataclass(frozen=True)
class CellTick:
    cell_id: str
    elapsed_s: float
    log: Path


@dataclass(frozen=True)
class CellFinished:
    index: int
    total: int
    result: CellResult
    reused: bool = False


@dataclass(frozen=True)
class Note:
    """Something the user should see (a hygiene finding, a skipped step)."""

    level: str
    text: str


Event = RunStarted | CellStarted | CellTick | CellFinished | EnvEvent | Note
Observer = Callable[[Event], None]


def ignore(_: Event) -> None:
    return None
