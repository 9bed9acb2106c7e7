"""What a recipe's ``vllm bench`` commands will really measure, said before anything runs.

Every command workload is rendered with the baseline's flags and with each arm's, read
as vLLM will read it (:mod:`vllmdiag.plan.bench_command`), and any length flag its
dataset ignores, dataset it replaces, or declared shape the command does not take is a
warning at load (``matrix``, ``study``, ``profile`` and their ``--dry-run``). After the
run, the totals the benchmark reports are checked against the same asked shape
(:func:`vllmdiag.plan.workloads.asked_shape`).
"""

from __future__ import annotations

from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.model.arms import Flag
from vllmdiag.model.recipe import Recipe, WorkloadConfig
from vllmdiag.plan import bench_command as benchmod
from vllmdiag.plan import command

_DECLARED = ("num_prompts", "input_len", "output_len")


def recipe_warnings(recipe: Recipe) -> tuple[str, ...]:
    """One line per problem, naming the workload (and the arm that brings it)."""
    out: list[str] = []
    sides: list[tuple[str, tuple[Flag, ...]]] = [("", recipe.baseline.flags)]
    sides += [(a.name, (*recipe.baseline.flags, *a.flag)) for a in recipe.all_arms()]
    for name, wl in recipe.workloads.items():
        if wl.command is None:
            continue
        said: set[str] = set()
        for arm, flags in sides:
            for problem in workload_problems(name, wl, flags, recipe.recipe_dir):
                if problem not in said:
                    said.add(problem)
                    out.append(problem + (f" (with arm {arm})" if arm else ""))
    return tuple(out)


def workload_problems(
    name: str, wl: WorkloadConfig, flags: tuple[Flag, ...], recipe_dir: Path
) -> list[str]:
    where = f"workloads.{name}.command"
    try:
        argv = command.render(
            wl, name=name, flags=flags, env={}, out_dir="<out>", recipe_dir=recipe_dir,
            leg=command.LegSeen("python"),
        ).argv  # fmt: skip
    except VllmdiagError:
        return []  # the run reports a bad template at its place
    bench = benchmod.parse(argv)
    if bench is None:
        return []
    problems = [f"{where}: {p}" for p in bench.problems]
    if bench.kind != benchmod.LATENCY:
        runs = {"num_prompts": bench.num_prompts, "input_len": bench.input_len,
                "output_len": bench.output_len}  # fmt: skip
        for field in _DECLARED:
            ran = runs[field]
            if field not in wl.model_fields_set or ran is None:
                continue
            declared = getattr(wl, field)
            if field == "input_len" and bench.dataset in benchmod.NO_PROMPT_CHECK:
                continue
            if declared != ran:
                problems.append(
                    f"{where}: the workload declares {field} {declared:,} but the command "
                    f"runs {ran:,} ({bench.describe()})"
                )
    return problems
