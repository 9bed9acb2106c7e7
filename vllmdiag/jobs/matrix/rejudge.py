"""``vllmdiag matrix verdict RUN_DIR``: a finished (or interrupted) matrix run decided
again from what its directory holds, nothing run: the recipe and the legs as its
``manifest.json`` recorded them, every cell's ``result.json`` and log. It rewrites
``summary.md``, ``summary.txt`` and ``verdict.json`` (atomically) and journals that it
did, so a verdict rule that changes can be applied to old runs, and a run kept as a
fixture regenerates its verdict on a machine without its legs. Each cell whose outcome
was read from its log is judged again with the triage that runs now (``runner/reread``):
whose fault a failure is may have been read otherwise when the run was recorded.

Inert arms are judged from the recorded evidence (the legs' versions, the cells' logs
and fingerprints); what only the live leg can say (the environment variables its vLLM
knows) is not asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from vllmdiag.jobs.matrix.report import MatrixReport
from vllmdiag.jobs.matrix.summary import write_summaries
from vllmdiag.model.decide import decide
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.stack import EnvRecord
from vllmdiag.model.verdict import MetricInfo, Verdict
from vllmdiag.plan import arm_infos, expand
from vllmdiag.plan.cells import arm_leg
from vllmdiag.spine.rundir import RunDir, layout, require_manifest
from vllmdiag.spine.rundir import ends as run_ends
from vllmdiag.spine.runner.on_node import skipped_result
from vllmdiag.spine.runner.readers import inert_from
from vllmdiag.spine.runner.reread import reread

HINT = "give the directory a 'vllmdiag matrix RECIPE' run wrote (it holds manifest.json)"


def rejudge(path: Path, warn: Callable[[str], None] | None = None) -> MatrixReport:
    """The run at ``path`` decided again; its summaries and verdict rewritten."""
    manifest, recipe = require_manifest(path, HINT)
    envs = manifest.envs
    run = RunDir(path, warn)
    found = run.finished()
    results = []
    for plan in expand(recipe):
        got = found.get(plan.id)
        results.append(reread(path, _local_log(path, got)) if got else skipped_result(plan))
    verdict = _decide(recipe, results, envs)
    ends = [e for e in run_ends(run.journal()) if not e.refused]
    status = ends[-1].status if ends else "interrupted"
    stopped = ends[-1].stopped_by if ends else None
    report = MatrixReport(
        recipe=recipe.name,
        question=recipe.question,
        source=str(recipe.source) if recipe.source else None,
        workloads=tuple(recipe.workloads),
        run_dir=path,
        cells=tuple(results),
        envs=envs,
        verdict=verdict,
        interrupted=status != "complete",
        stopped_by=stopped,
    )
    write_summaries(run, report, recipe)
    run.event("verdict_recomputed", cells=len(found), mode=verdict.mode.value)
    return report


def _decide(recipe: Recipe, results: list[CellResult], envs: dict[str, EnvRecord]) -> Verdict:
    metrics = {}
    for w in recipe.workloads:
        specs = recipe.metrics_for(w)
        if specs:
            metrics[w] = MetricInfo(specs[0].name, specs[0].better)
    # The recorded key may be of the leg as resolved on the node (a venv for its python):
    # find each arm's leg by key, else by name.
    by_name = {r.leg: r for r in envs.values()}
    versions = {}
    for arm in recipe.arms:
        leg = arm_leg(recipe, arm)
        record = envs.get(leg.key()) or by_name.get(leg.name)
        if record is not None:
            versions[leg.key()] = dict(record.stack.versions())
    return decide(
        arm_infos(recipe),
        list(recipe.workloads),
        results,
        metrics=metrics or None,
        target=recipe.target,
        inert=inert_from(recipe, results, versions),
    )


def _local_log(path: Path, result: CellResult) -> CellResult:
    """A run directory that moved (a fixture) still has each cell's log beside it."""
    if result.log and Path(result.log).is_file():
        return result
    here = layout.cell_log(path, result.id)
    return replace(result, log=str(here)) if here.is_file() else result
