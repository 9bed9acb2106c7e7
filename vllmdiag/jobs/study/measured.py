"""A study's results as the canonical selection sees them. Pure frozen values.

Each finished cell of every batch is a :class:`Measured`: where it sits in the study
(its :class:`Slot` and repeat), what it came to, and the settings it was measured under
(:class:`CellSettings`: the installed leg, the exact command, the environment overlay).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from vllmdiag.jobs.study.plan import Slot
from vllmdiag.model.outcome import Outcome
from vllmdiag.services.envs.verify import freeze_versions


@dataclass(frozen=True)
class CellSettings:
    """What makes two measurements "the same settings": the leg they ran on (its name
    and, through the lock hash, every installed package's version), the command (the
    run directory and the leg's interpreter written as ``{out_dir}`` / ``{python}``,
    the recipe's directory as ``{recipe_dir}``) and the environment overlay. The
    repeat, the batch, the host and the time are not settings. ``env`` None: not
    known (the journal line that recorded it is lost)."""

    leg: str
    lock_hash: str
    argv: tuple[str, ...]
    env: dict[str, str] | None = None


@dataclass(frozen=True)
class Expected:
    """The study's current settings for one slot: ``lock_hash`` None where the leg was
    never recorded (then any install of it matches); any of ``argvs`` matches (a leg's
    ``vllm bench`` may spell the random dataset's lengths either way)."""

    leg: str
    lock_hash: str | None
    argvs: tuple[tuple[str, ...], ...]
    env: dict[str, str]


def differences(
    got: CellSettings, want: Expected, freezes: Mapping[str, tuple[str, ...]] | None = None
) -> list[str]:
    """What differs between a measurement's settings and the study's, one phrase each
    (empty: the same settings). ``freezes``: lock hash → installed packages, to name
    the packages that differ between two installs."""
    out = []
    if got.leg != want.leg:
        out.append(f"leg {got.leg} instead of {want.leg}")
    elif want.lock_hash is not None and got.lock_hash != want.lock_hash:
        changed = _freeze_diff(freezes or {}, got.lock_hash, want.lock_hash)
        detail = f": {changed}" if changed else ""
        out.append(f"leg {got.leg} installed differently (lock {got.lock_hash or '?'}{detail})")
    if got.argv not in want.argvs:
        closest = max(want.argvs, key=lambda w: difflib.SequenceMatcher(a=w, b=got.argv).ratio())
        out.append("command " + _argv_diff(got.argv, closest))
    if got.env is None:
        out.append("environment not recorded")
    elif got.env != want.env:
        out.append("environment " + _env_diff(got.env, want.env))
    return out


def _argv_diff(got: tuple[str, ...], want: tuple[str, ...]) -> str:
    parts = []
    matcher = difflib.SequenceMatcher(a=want, b=got, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        had, has = " ".join(got[b1:b2]), " ".join(want[a1:a2])
        if op == "replace":
            parts.append(f"[{had}] instead of [{has}]")
        elif op == "delete":
            parts.append(f"without [{has}]")
        elif op == "insert":
            parts.append(f"with extra [{had}]")
    return ", ".join(parts) or "differs"


def _env_diff(got: Mapping[str, str], want: Mapping[str, str]) -> str:
    parts = []
    for k in sorted(set(got) | set(want)):
        if k not in want:
            parts.append(f"{k}={got[k]} set")
        elif k not in got:
            parts.append(f"{k} not set (now {want[k]})")
        elif got[k] != want[k]:
            parts.append(f"{k}={got[k]} (now {want[k]})")
    return ", ".join(parts)


def _freeze_diff(freezes: Mapping[str, tuple[str, ...]], got: str, want: str) -> str:
    a, b = freeze_versions(freezes.get(got, ())), freeze_versions(freezes.get(want, ()))
    if not a or not b:
        return ""
    parts = []
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            parts.append(f"{name} {a.get(name, '—')} (now {b.get(name, '—')})")
    shown = parts[:6] + ([f"{len(parts) - 6} more"] if len(parts) > 6 else [])
    return ", ".join(shown)


@dataclass(frozen=True)
class Measured:
    """One finished cell of one batch. ``why``: for a cell that did not pass, its root
    cause or reason; ``finished``: when (ISO 8601, UTC); ``contaminated``: the hygiene
    findings that made its leg contaminated in that batch."""

    batch: str
    cell: str
    slot: Slot
    repeat: int
    outcome: Outcome
    settings: CellSettings
    finished: str
    metrics: dict[str, float] = field(default_factory=dict)
    why: str = ""
    contaminated: tuple[str, ...] = ()


class Standing(str, Enum):
    """Why a run counts, or why not (in the order the reasons are given)."""

    CANONICAL = "canonical"
    NOT_IN_STUDY = "not in the study"
    CONTAMINATED = "contaminated leg"
    OTHER_SETTINGS = "other settings"
    FAILED = "failed"
    INCOMPLETE = "incomplete"
    #: No longer given (every same-settings run is pooled); kept to read old records.
    SUPERSEDED = "superseded"


@dataclass(frozen=True)
class RunRef:
    """One batch's run of a slot: its cells (one per repeat)."""

    batch: str
    cells: tuple[str, ...]
    finished: str


@dataclass(frozen=True)
class Excluded:
    run: RunRef
    status: Standing
    reason: str


@dataclass(frozen=True)
class Choice:
    """A slot's values (per metric, the median over every cell of every run that
    counts: ``pooled``) and its reference run (``canonical``: the latest complete one),
    or why it has none (``missing``); every other run, with why it does not count.
    ``repeats``: each metric's values, oldest run first, repeat by repeat; ``origins``:
    where each of them came from (``batch/cell``)."""

    slot: Slot
    canonical: RunRef | None
    values: dict[str, float]
    repeats: dict[str, tuple[float, ...]]
    missing: str | None
    excluded: tuple[Excluded, ...]
    #: The latest run's outcome when nothing counts ("fail", "timeout", "error", ...).
    outcome: str | None = None
    pooled: tuple[RunRef, ...] = ()
    origins: dict[str, tuple[str, ...]] = field(default_factory=dict)
