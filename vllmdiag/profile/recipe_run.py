"""``vllmdiag profile RECIPE --legs A B``: a recipe's legs and workload as capture targets.

Legs are built (or adopted, for ``path:`` legs) through the env cache; the workload is
rendered with the baseline's flags and environment. A workload whose command is
``{python} SCRIPT.py ...`` is driven by the torch launcher; ``vllm ...`` switches on
vLLM's own profiler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from vllmdiag.config import load_recipe
from vllmdiag.engine import workloads
from vllmdiag.engine.journal import RunDir
from vllmdiag.engine.legs import recipe_legs
from vllmdiag.envs import EnvCache
from vllmdiag.errors import ConfigError
from vllmdiag.profile.capture import OUT_DIR, PYTHON, Workload
from vllmdiag.profile.run import Journal, LegTarget


def prepare(
    recipe_path: Path,
    legs: Sequence[str],
    workload: str | None,
    *,
    warmup: int,
    steps: int,
    out: Path | None,
    runs_root: Path,
    say: Callable[[str], object] = lambda _m: None,
) -> tuple[list[LegTarget], Workload, Path, Journal]:
    recipe = load_recipe(recipe_path)
    if len(legs) != 2:
        raise ConfigError(
            f"profile takes two legs, got {len(legs)}: {', '.join(legs) or 'none'}",
            where=str(recipe_path),
            hint=f"e.g. --legs {' '.join(list(recipe.legs)[:2])}",
        )
    names = list(recipe.workloads)
    if workload is None:
        if len(names) != 1:
            raise ConfigError(
                f"recipe {recipe.name!r} has {len(names)} workloads; pick one with --workload",
                where=str(recipe_path),
                hint=f"workloads: {', '.join(names)}",
            )
        workload = names[0]
    if workload not in recipe.workloads:
        raise ConfigError(
            f"no workload {workload!r} in recipe {recipe.name!r}",
            where=str(recipe_path),
            hint=f"workloads: {', '.join(names)}",
        )
    wl = recipe.workloads[workload]
    specs = [recipe_legs(recipe, name)[0] for name in legs]  # all names checked first
    run = RunDir.create(f"profile-{recipe.name}", out=out, runs_root=runs_root)
    cache = EnvCache()
    targets = []
    for name, spec in zip(legs, specs, strict=True):
        say(f"leg {name}: preparing environment")
        env = cache.ensure(spec, log=run.path / f"env-{name}.log")
        targets.append(LegTarget(name, env.python))
    argv = workloads.render(
        wl,
        name=workload,
        flags=recipe.baseline.flags,
        out_dir=Path(OUT_DIR),  # each capture's own directory, filled in per leg
        recipe_dir=recipe.recipe_dir,
        python=Path(PYTHON),
    )
    env_vars = {**recipe.baseline.env, **wl.env}
    if len(argv) >= 2 and argv[0] == PYTHON and argv[1].endswith(".py"):
        w = Workload(script=Path(argv[1]), script_args=tuple(argv[2:]), warmup=warmup,
                     steps=steps, env=env_vars)  # fmt: skip
    else:
        w = Workload(argv=tuple(argv), warmup=warmup, steps=steps, env=env_vars)
    run.event("profile_started", recipe=recipe.name, legs=list(legs), workload=workload,
              argv=argv)  # fmt: skip

    def journal(event: str, fields: dict[str, object]) -> None:
        run.event(event, **fields)

    return targets, w, run.path, journal
