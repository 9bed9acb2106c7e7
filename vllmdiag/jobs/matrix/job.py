"""The falsification matrix: plan, run the cells, decide, write it up.

Everything that can be checked before running is checked before running: the recipe,
the arms, every cell's command. Then, inside :func:`~vllmdiag.spine.measuring.measuring` (the
node lock; SIGTERM and SIGHUP stop it as Ctrl-C does), the cells run through
:func:`~vllmdiag.spine.runner.run_cells`, and the verdict is decided from their results.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from vllmdiag.events import Observer, ignore
from vllmdiag.jobs.matrix.matrix_plan import plan_matrix
from vllmdiag.jobs.matrix.report import MatrixReport
from vllmdiag.jobs.matrix.summary import write_summaries
from vllmdiag.model.decide import decide
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.verdict import MetricInfo, Verdict
from vllmdiag.plan import arm_infos, expand
from vllmdiag.services import proc
from vllmdiag.services.envs.cache import EnvCache
from vllmdiag.spine.measuring import measuring
from vllmdiag.spine.runner import CellsReport, Executor, LocalExecutor, RunOptions, run_cells
from vllmdiag.spine.runner.events import CellsEvent
from vllmdiag.spine.runner.readers import RunReaders


@dataclass(frozen=True)
class MatrixOptions:
    out: Path | None = None
    resume: Path | None = None
    runs_root: Path = Path("runs")
    grace_s: float = proc.DEFAULT_GRACE_S
    allow_contaminated: bool = False
    executor: Executor = field(default_factory=LocalExecutor)
    cache: EnvCache = field(default_factory=EnvCache)
    wait: bool = False  # queue behind another job holding the node lock

    def run_options(self) -> RunOptions:
        return RunOptions(
            out=self.out,
            resume=self.resume,
            runs_root=self.runs_root,
            grace_s=self.grace_s,
            allow_contaminated=self.allow_contaminated,
            executor=self.executor,
            cache=self.cache,
        )


def run_matrix(
    recipe: Recipe, options: MatrixOptions, observer: Observer[CellsEvent] = ignore
) -> MatrixReport:
    """Run ``recipe`` to its verdict (see the module's docstring)."""
    plan_matrix(recipe, options.cache)  # validates every command before anything runs
    with measuring(wait=options.wait, observer=observer, grace_s=options.grace_s) as stop:
        # Timing needs the node to itself; pass/fail cells share it on disjoint GPUs.
        run_options = replace(options.run_options(), exclusive=recipe.is_metric_matrix)
        ran = run_cells(recipe, expand(recipe), run_options, observer)
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
