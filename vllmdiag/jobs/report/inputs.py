"""What a report is drafted from, read back as typed values: run directories (through
:mod:`vllmdiag.spine.rundir`), a window (``vllmdiag window --json``) and a profile run.

A damaged file inside a run directory is skipped with a warning (the report then says
less, never something wrong); a path that is not what its option asks for is a user
mistake, with a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from vllmdiag import codec
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.window import WindowResult
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.stack import EnvRecord
from vllmdiag.model.verdict import Verdict
from vllmdiag.services import atomic
from vllmdiag.spine.rundir import layout, read_run
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
    if not layout.holds_run(path):
        raise VllmdiagError(
            f"not a vllmdiag run directory (no {layout.EVENTS}, no {layout.CELLS}/)",
            where=str(path),
            hint="give run directories 'vllmdiag matrix' wrote (runs/<recipe>-<time>/)",
        )
    run = read_run(path, warn)
    recipe = run.recipe
    if recipe is None:
        warn(f"{path}: no recipe recorded; arms are named without their change")
    results = tuple(reread(path, r) for r in run.results().values())
    if not results:
        raise VllmdiagError(
            "the run directory holds no finished cell",
            where=str(path),
            hint="finish the run first: vllmdiag matrix RECIPE --resume " + str(path),
        )
    first = run.starts[0] if run.starts else None
    name = first.recipe if first else (recipe.name if recipe else path.name)
    hosts = tuple(dict.fromkeys(s.host for s in run.starts if s.host))
    # the legs' own records; a run that kept none has the manifest's
    envs = run.envs or (run.manifest.envs if run.manifest is not None else {})
    return RunEvidence(
        path=path,
        name=name,
        recipe=recipe,
        results=results,
        envs={r.leg: r for r in envs.values()},
        verdict=run.verdict,
        cell_env={i: c.journal.env for i, c in run.cells.items() if c.journal.env is not None},
        hosts=hosts,
        started=first.ts if first and first.ts else None,
    )


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
