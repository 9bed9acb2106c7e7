"""Capture one workload on several legs, serially, into one run directory.

``<run>/<leg>/<backend>/`` per capture, ``<run>/journal.jsonl`` (one line per capture
started/finished, appended as it happens, so an interrupted run still says what it
did) and ``<run>/profile.json`` (the outcome). A leg whose capture fails says why; the
other legs' data is kept. An nsys capture that cannot produce a report falls back to
the torch profiler (when torch was not asked for anyway).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllmdiag import atomic
from vllmdiag.errors import VllmdiagError
from vllmdiag.profile.capture import BACKENDS, CaptureResult, Workload, capture

SCHEMA = 1


@dataclass(frozen=True)
class LegTarget:
    """One side of a profile: a name, the leg's python, and (for an arm on a leg) the
    side's own workload, which replaces the run's shared one."""

    name: str
    python: Path
    workload: Workload | None = None


@dataclass(frozen=True)
class ProfileRun:
    out: Path
    captures: tuple[CaptureResult, ...]
    warnings: tuple[str, ...] = ()

    def leg_dir(self, leg: str, backend: str) -> Path | None:
        for c in self.captures:
            if c.leg == leg and c.backend == backend and c.ok:
                return c.out
        return None

    def sides(self, backends: Sequence[str]) -> list[tuple[str, Path]]:
        """(side, capture directory) of each side with a good capture of one of
        ``backends`` (the first that has one), in run order."""
        out = []
        for leg in dict.fromkeys(c.leg for c in self.captures):
            for backend in backends:
                d = self.leg_dir(leg, backend)
                if d is not None:
                    out.append((leg, d))
                    break
        return out

    def to_json(self) -> dict[str, object]:
        return {"schema": SCHEMA, "out": str(self.out), "warnings": list(self.warnings),
                "captures": [c.to_json() for c in self.captures]}  # fmt: skip

    @classmethod
    def from_json(cls, data: object, root: Path) -> ProfileRun:
        """The run ``profile.json`` describes, its paths under ``root`` (where the run
        directory is now)."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}; this vllmdiag reads {SCHEMA}")
        caps = data.get("captures")
        warns = data.get("warnings", [])
        if not isinstance(caps, list) or not isinstance(warns, list):
            raise ValueError("'captures' and 'warnings' must be lists")
        return cls(root, tuple(CaptureResult.from_json(c, root) for c in caps),
                   tuple(str(w) for w in warns))  # fmt: skip


Observer = Callable[[str, CaptureResult | None, str], None]
Journal = Callable[[str, dict[str, object]], None]


def jsonl_journal(out: Path) -> Journal:
    """Events appended to ``<out>/journal.jsonl`` as they happen."""

    def write(event: str, fields: dict[str, object]) -> None:
        record = {"schema": SCHEMA, "t": time.time(), "event": event, **fields}
        atomic.append_jsonl(out / "journal.jsonl", record)

    return write


def profile_legs(
    legs: Sequence[LegTarget],
    workload: Workload,
    out: Path,
    backends: Sequence[str] = ("torch",),
    *,
    observer: Observer | None = None,
    journal: Journal | None = None,
    timeout: float | None = 3600,
) -> ProfileRun:
    for b in backends:
        if b not in BACKENDS:
            raise VllmdiagError(f"unknown capture {b!r}", hint=f"use one of {', '.join(BACKENDS)}")
    names = [leg.name for leg in legs]
    if len(set(names)) != len(names):
        raise VllmdiagError(f"leg names must differ: {names}")
    out.mkdir(parents=True, exist_ok=True)
    note = journal or jsonl_journal(out)
    results: list[CaptureResult] = []
    for leg in legs:
        todo = list(backends)
        while todo:
            backend = todo.pop(0)
            if observer:
                observer(leg.name, None, backend)
            note("capture_started", {"leg": leg.name, "backend": backend})
            res = capture(leg.name, leg.python, leg.workload or workload, out / leg.name,
                          backend, timeout=timeout)  # fmt: skip
            results.append(res)
            note("capture_finished", res.to_json())
            if observer:
                observer(leg.name, res, backend)
            if backend == "nsys" and not res.ok and "torch" not in backends:
                todo.insert(0, "torch")  # fall back, and say so in the journal
                note("capture_fallback", {"leg": leg.name, "from": "nsys", "to": "torch",
                                          "reason": res.reason})  # fmt: skip
    warnings = _window_warnings(results)
    for w in warnings:
        note("warning", {"message": w})
    run = ProfileRun(out, tuple(results), warnings)
    atomic.write_json(out / "profile.json", run.to_json())
    return run


def _window_warnings(results: Sequence[CaptureResult]) -> tuple[str, ...]:
    """vLLM legs whose profiler could not be given the same captured window."""
    how = {c.leg: c.notes for c in results if c.backend == "torch" and c.ok and c.notes}
    if len(set(how.values())) > 1:
        detail = "; ".join(f"{leg}: {' '.join(n)}" for leg, n in how.items())
        return (f"the legs' profilers were switched on differently ({detail}): the captured "
                "windows may differ, compare per-step figures",)  # fmt: skip
    return ()


def load_run(path: Path) -> ProfileRun | None:
    """The run a directory's ``profile.json`` describes, or None if ``path`` is not a
    profile run directory; a ``profile.json`` that does not read back is an error."""
    f = path / "profile.json"
    if not f.is_file():
        return None
    try:
        return ProfileRun.from_json(json.loads(f.read_text(encoding="utf-8")), path)
    except ValueError as exc:  # JSONDecodeError included
        raise VllmdiagError(
            f"profile.json does not read back: {exc}",
            where=str(f),
            hint="it was written by another vllmdiag version, or edited; diff the capture "
            "directories inside it instead: vllmdiag profile diff RUN/A/torch RUN/B/torch",
        ) from None
