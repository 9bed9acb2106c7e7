"""What a report is drafted from, read back as typed values: run directories (through
:mod:`vllmdiag.spine.journal`), a window (``vllmdiag window --json``) and a profile run.

A damaged file inside a run directory is skipped with a warning (the report then says
less, never something wrong); a path that is not what its option asks for is a user
mistake, with a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vllmdiag import codec
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.window import WindowResult
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.stack import EnvRecord, StackInfo
from vllmdiag.model.verdict import Verdict
from vllmdiag.services import atomic
from vllmdiag.spine.journal import EVENTS, RunDir
from vllmdiag.spine.runner.reread import reread

Warn = Callable[[str], None]


@dataclass(frozen=True)
class RunEvidence:
    """One run directory: its results, its legs' records (by leg name), its verdict,
    each cell's environment as journaled, and the hosts it ran on."""

    path: Path
    name: str
    recipe: Recipe | None
    results: tuple[CellResult, ...]
    envs: dict[str, EnvRecord] = field(default_factory=dict)
    verdict: Verdict | None = None
    cell_env: dict[str, dict[str, str]] = field(default_factory=dict)
    hosts: tuple[str, ...] = ()
    started: str | None = None  # when the run started (its journal's first event)

    def failing(self) -> list[CellResult]:
        """Cells whose workload failed or hung (never an ERROR: that is no result)."""
        return [r for r in self.results if r.outcome in (Outcome.FAIL, Outcome.TIMEOUT)]

    def env_of(self, cell: CellResult) -> EnvRecord | None:
        found = self.envs.get(cell.leg)
        if found is None:
            found = next((e for e in self.envs.values() if e.lock_hash == cell.lock_hash), None)
        return found

    def cell(self, arm: str, workload: str, repeat: int) -> CellResult | None:
        return next(
            (
                r
                for r in self.results
                if r.arm == arm and r.workload == workload and r.repeat == repeat
            ),
            None,
        )


def load_run(path: Path, warn: Warn) -> RunEvidence:
    if not path.is_dir():
        raise VllmdiagError(
            "not a directory" if path.exists() else "no such directory",
            where=str(path),
            hint="give run directories 'vllmdiag matrix' wrote (runs/<recipe>-<time>/)",
        )
    if not (path / EVENTS).is_file() and not (path / "cells").is_dir():
        raise VllmdiagError(
            "not a vllmdiag run directory (no run.jsonl, no cells/)",
            where=str(path),
            hint="give run directories 'vllmdiag matrix' wrote (runs/<recipe>-<time>/)",
        )
    run = RunDir(path, warn)
    events = run.events() if (path / EVENTS).is_file() else []
    manifest = _json(path / "manifest.json", warn)
    recipe = _recipe(manifest, path, warn)
    results = tuple(reread(path, r) for r in sorted(run.finished().values(), key=lambda r: r.id))
    if not results:
        raise VllmdiagError(
            "the run directory holds no finished cell",
            where=str(path),
            hint="finish the run first: vllmdiag matrix RECIPE --resume " + str(path),
        )
    started = [e for e in events if e.get("event") == "run_started"]
    name = str(started[0].get("recipe")) if started else (recipe.name if recipe else path.name)
    hosts = tuple(dict.fromkeys(str(e["host"]) for e in started if e.get("host")))
    return RunEvidence(
        path=path,
        name=name,
        recipe=recipe,
        results=results,
        envs=_envs(path, manifest, warn),
        verdict=_verdict(path, warn),
        cell_env=_cell_envs(events),
        hosts=hosts,
        started=str(started[0]["ts"]) if started and started[0].get("ts") else None,
    )


def _json(file: Path, warn: Warn) -> Any:
    if not file.exists():
        return None
    try:
        return atomic.read_json(file)
    except (OSError, ValueError) as exc:
        warn(f"{file}: unreadable ({exc}); left out of the report")
        return None


def _recipe(manifest: Any, path: Path, warn: Warn) -> Recipe | None:
    if not isinstance(manifest, Mapping) or not isinstance(manifest.get("recipe"), Mapping):
        warn(f"{path / 'manifest.json'}: no recipe in it; arms are named without their change")
        return None
    try:
        return Recipe.model_validate(manifest["recipe"])
    except ValidationError as exc:
        first = str(exc).splitlines()[0]
        warn(f"{path / 'manifest.json'}: its recipe does not read back ({first})")
        return None


def _envs(path: Path, manifest: Any, warn: Warn) -> dict[str, EnvRecord]:
    raw: list[tuple[str, Any]] = []
    for file in sorted((path / "envs").glob("*.json")):
        raw.append((str(file), _json(file, warn)))
    if not raw and isinstance(manifest, Mapping) and isinstance(manifest.get("envs"), Mapping):
        raw = [(f"{path / 'manifest.json'}: envs.{k}", v) for k, v in manifest["envs"].items()]
    out: dict[str, EnvRecord] = {}
    for where, data in raw:
        if data is None:
            continue
        try:
            record = env_record(data)
        except (ValidationError, TypeError, ValueError) as exc:
            warn(f"{where}: not a leg record ({str(exc).splitlines()[0]}); left out")
            continue
        out[record.leg] = record
    return out


def env_record(data: Any) -> EnvRecord:
    """An ``envs/<key>.json`` as an :class:`EnvRecord`; schema 1 named the stack's
    packages by distribution (``flashinfer-python``), as the stack probe reports them."""
    if not isinstance(data, Mapping):
        raise TypeError(f"a JSON {type(data).__name__}, not an object")
    stack = data.get("stack")
    if isinstance(stack, Mapping) and any("-" in str(k) for k in stack):
        data = {**data, "stack": codec.dump(StackInfo.from_probe(stack))}
    return codec.load(EnvRecord, data)


def _verdict(path: Path, warn: Warn) -> Verdict | None:
    data = _json(path / "verdict.json", warn)
    if data is None:
        return None
    try:
        return codec.load(Verdict, data)
    except ValidationError as exc:
        warn(f"{path / 'verdict.json'}: not a verdict ({str(exc).splitlines()[0]}); left out")
        return None


def _cell_envs(events: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Each cell's environment as its last ``cell_started`` record journaled it."""
    out: dict[str, dict[str, str]] = {}
    for ev in events:
        env = ev.get("env")
        if ev.get("event") == "cell_started" and isinstance(env, Mapping):
            out[str(ev.get("id"))] = {str(k): str(v) for k, v in env.items()}
    return out


def load_window(path: Path) -> WindowResult:
    """The JSON ``vllmdiag window --json`` printed."""
    where = str(path)
    hint = "save it with: vllmdiag window PKG --symbol MOD.ATTR --consumer vllm==X --json > w.json"
    try:
        data = atomic.read_json(path)
    except OSError as exc:
        raise VllmdiagError(
            f"cannot read the window: {exc.strerror}", where=where, hint=hint
        ) from None
    except ValueError as exc:
        raise VllmdiagError(f"not a JSON window result ({exc})", where=where, hint=hint) from None
    if isinstance(data, Mapping) and "error" in data and "versions" not in data:
        raise VllmdiagError(
            f"this file holds the error a window run printed: {data.get('error')}",
            where=where,
            hint="fix that run, then save its result again",
        )
    try:
        return codec.load(WindowResult, data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise VllmdiagError(
            f"not a window result: {loc or 'the top level'}: {err['msg']}", where=where, hint=hint
        ) from None
