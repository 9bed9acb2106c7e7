"""``vllmdiag profile RECIPE --legs A B | --arms A B``: a recipe's sides as capture targets.

Sides come from :mod:`sides`; their legs are built (or adopted, for ``path:`` legs)
through the env cache, once per distinct leg; each side's workload is rendered with its
own flags and environment. A workload whose command is ``{python} SCRIPT.py ...`` is
driven by the torch launcher; ``vllm ...`` switches on vLLM's own profiler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.config import load_recipe
from vllmdiag.envs import EnvCache
from vllmdiag.errors import ConfigError
from vllmdiag.journal import RunDir
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import workloads
from vllmdiag.profile.capture import OUT_DIR, PYTHON, Workload
from vllmdiag.profile.run import Journal, LegTarget
from vllmdiag.profile.sides import SidePlan, plan_sides


@dataclass(frozen=True)
class Prepared:
    """Everything a recipe's profile run needs, its environments ready."""

    targets: list[LegTarget]
    workload: Workload
    out: Path
    journal: Journal
    timeout: float


def _workload_name(recipe: Recipe, recipe_path: Path, workload: str | None) -> str:
    names = list(recipe.workloads)
    if workload is None:
        if len(names) != 1:
            raise ConfigError(
                f"recipe {recipe.name!r} has {len(names)} workloads; pick one with --workload",
                where=str(recipe_path),
                hint=f"workloads: {', '.join(names)}",
            )
        return names[0]
    if workload not in recipe.workloads:
        raise ConfigError(
            f"no workload {workload!r} in recipe {recipe.name!r}",
            where=str(recipe_path),
            hint=f"workloads: {', '.join(names)}",
        )
    return workload


def side_workload(
    recipe: Recipe, name: str, side: SidePlan, *, warmup: int, steps: int
) -> Workload:
    """The side's workload: the recipe's command with the side's flags and environment
    (``{python}`` and ``{out_dir}`` are filled in per capture)."""
    wl = recipe.workloads[name]
    argv = workloads.render(wl, name=name, flags=side.flags, out_dir=Path(OUT_DIR),
                            recipe_dir=recipe.recipe_dir, python=Path(PYTHON))  # fmt: skip
    env = {**side.env, **wl.env}
    if len(argv) >= 2 and argv[0] == PYTHON and argv[1].endswith(".py"):
        return Workload(script=Path(argv[1]), script_args=tuple(argv[2:]), warmup=warmup,
                        steps=steps, env=env)  # fmt: skip
    return Workload(argv=tuple(argv), warmup=warmup, steps=steps, env=env)


def prepare(
    recipe_path: Path,
    legs: Sequence[str],
    workload: str | None,
    *,
    warmup: int,
    steps: int,
    out: Path | None,
    runs_root: Path,
    arms: Sequence[str] = (),
    leg: str | None = None,
    say: Callable[[str], object] = lambda _m: None,
) -> Prepared:
    recipe = load_recipe(recipe_path)
    sides = plan_sides(recipe, legs, arms, leg)  # every name checked before anything runs
    name = _workload_name(recipe, recipe_path, workload)
    per_side = [side_workload(recipe, name, s, warmup=warmup, steps=steps) for s in sides]
    run = RunDir.create(f"profile-{recipe.name}", out=out, runs_root=runs_root)
    cache = EnvCache()
    pythons: dict[str, Path] = {}
    targets = []
    for side, w in zip(sides, per_side, strict=True):
        key = side.leg.key()
        if key not in pythons:
            say(f"leg {side.leg.name}: preparing environment")
            env = cache.ensure(side.leg, log=run.path / f"env-{side.leg.name}.log")
            pythons[key] = env.python
        targets.append(LegTarget(side.name, pythons[key], w))
    run.event(
        "profile_started",
        recipe=recipe.name,
        legs=[s.name for s in sides],
        sides=[s.describe() for s in sides],
        workload=name,
        argv=[list(w.argv) or [str(w.script), *w.script_args] for w in per_side],
    )

    def journal(event: str, fields: dict[str, object]) -> None:
        run.event(event, **fields)

    return Prepared(targets, per_side[0], run.path, journal, recipe.timeout)
