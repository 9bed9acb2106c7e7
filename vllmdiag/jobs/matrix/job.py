"""The falsification matrix: plan, run the cells, decide, write it up.

Everything that can be checked before running is checked before running: the recipe,
the arms, every cell's command. Then, inside :func:`~vllmdiag.spine.measuring.measuring` (the
node lock; SIGTERM and SIGHUP stop it as Ctrl-C does), the cells run through
:func:`~vllmdiag.spine.runner.run_cells`, and the verdict is decided from their results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vllmdiag.events import Observer, ignore
from vllmdiag.jobs.matrix.matrix_plan import plan_matrix
from vllmdiag.jobs.matrix.report import MatrixReport
from vllmdiag.jobs.matrix.summary import write_summaries
from vllmdiag.model.decide import decide
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.verdict import MetricInfo, Verdict
from vllmdiag.plan import arm_infos, expand
from vllmdiag.spine.measuring import measuring
from vllmdiag.spine.runner import CellsJob, CellsReport, RunOptions, run_cells
from vllmdiag.spine.runner.events import CellsEvent
from vllmdiag.spine.runner.readers import RunReaders


@dataclass(frozen=True)
class MatrixOptions:
    """``out``: a new run directory (default ``RUNS_ROOT/<recipe>-<UTC>``), or
    ``resume``: an interrupted run to finish in place; ``run``: how the cells run."""

    out: Path | None = None
    resume: Path | None = None
    run: RunOptions = field(default_factory=RunOptions)


def run_matrix(
    recipe: Recipe, options: MatrixOptions, observer: Observer[CellsEvent] = ignore
) -> MatrixReport:
    """Run ``recipe`` to its verdict (see the module's docstring)."""
    run = options.run
    plan_matrix(recipe, run.cache)  # validates every command before anything runs
    # Timing needs the node to itself; pass/fail cells share it on disjoint GPUs.
    job = CellsJob(out=options.out, resume=options.resume, exclusive=recipe.is_metric_matrix)
    with measuring(wait=run.wait, observer=observer, grace_s=run.grace_s) as stop:
        ran = run_cells(recipe, expand(recipe), run, observer, job=job)
        report = MatrixReport(
            recipe=recipe.name,
            question=recipe.question,
            source=str(recipe.source) if recipe.source else None,
            workloads=tuple(recipe.workloads),
            run_dir=ran.run_dir,
            cells=ran.results,
            envs={k: env.record() for k, env in ran.envs.items()},
            verdict=decide_verdict(recipe, ran),
            interrupted=ran.interrupted,
            stopped_by=(stop.signame or "SIGINT") if ran.interrupted else None,
        )
        write_summaries(ran.run, report, recipe)
    return report


def decide_verdict(recipe: Recipe, ran: CellsReport) -> Verdict:
    metrics = {}
    for w in recipe.workloads:
        specs = recipe.metrics_for(w)
        if specs:
            metrics[w] = MetricInfo(specs[0].name, specs[0].better)
    inert = RunReaders().inert_arms(recipe, ran.results, ran.envs, ran.failures)
    return decide(
        arm_infos(recipe),
        list(recipe.workloads),
        ran.results,
        metrics=metrics or None,
        target=recipe.target,
        inert=inert,
    )
