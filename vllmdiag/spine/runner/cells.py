"""``run_cells``: the one way vllmdiag runs cells, for every job (matrix, bisect,
profile, study), on this machine or across the nodes of a cluster.

Legs are built first on every node (a leg that fails makes its cells ERROR), checked for
hygiene there, then the cells run through an
:class:`~vllmdiag.spine.runner.executor.Executor`, each in its own process group, placed by GPU
slots (:mod:`vllmdiag.spine.runner.slots`): one at a time per node for timing runs, side by side
on disjoint GPUs where only pass or fail is asked. This thread alone journals: each
finished cell's result is written atomically as it finishes, so a run killed at any
instant loses nothing that had finished; ``--resume`` reuses a finished result whose
reuse key still matches and ends what a SIGKILLed earlier run left behind. It runs only
inside :func:`vllmdiag.spine.measuring.measuring` (the node lock, stop signals).
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllmdiag.errors import EnvError, ProcessError, VllmdiagError
from vllmdiag.events import Note, Observer, fan_out, ignore
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import cells as planmod
from vllmdiag.services import proc
from vllmdiag.services.envs.cache import Env, EnvCache
from vllmdiag.spine.journal import JournalSink, RunDir, host
from vllmdiag.spine.measuring import is_measuring, stopped_by, strays_ended
from vllmdiag.spine.runner.events import (
    CellFinished,
    CellInterrupted,
    CellReused,
    CellsEvent,
    CellSpawned,
    CellStarted,
    CellSwept,
    CellTick,
    LeftoversEnded,
    RunFinished,
    RunStarted,
)
from vllmdiag.spine.runner.executor import CellTask, Executor, LocalExecutor, NodeLost, nodes_for
from vllmdiag.spine.runner.judge import Judge
from vllmdiag.spine.runner.leftovers import end_leftovers, run_id_of
from vllmdiag.spine.runner.legs import NodeLegs, legs_per_node, merged, prepare_nodes
from vllmdiag.spine.runner.on_node import (
    CellOnNode,
    child_environ,
    error_result,
    on_node,
    skipped_result,
)
from vllmdiag.spine.runner.pool import CellPool, Finished, Job
from vllmdiag.spine.runner.readers import HygieneSummary, RunReaders
from vllmdiag.spine.runner.slots import NodeSlots, Placement, SlotScheduler, gpus_needed

#: Cells a finished (or reused) cell asks for, run after it on legs already built (e.g. a
#: profile capture that fell back to another profiler).
FollowUp = Callable[[planmod.CellPlan, CellResult], Sequence[planmod.CellPlan]]


@dataclass(frozen=True)
class RunOptions:
    """Where and how cells run. ``name``: the run directory's prefix (default: the
    recipe's name); ``job``: what the job adds to the journal's ``run_started``;
    ``exclusive``: one cell per node at a time, holding all its GPUs (timing runs; a job
    that only asks pass or fail sets it False to share nodes on disjoint GPUs);
    ``command``: the vllmdiag command that resumes the run (for the hints a stopped run
    prints); ``follow_up``: see :data:`FollowUp`."""

    out: Path | None = None
    resume: Path | None = None
    runs_root: Path = Path("runs")
    name: str | None = None
    grace_s: float = proc.DEFAULT_GRACE_S
    allow_contaminated: bool = False
    executor: Executor = field(default_factory=LocalExecutor)
    cache: EnvCache = field(default_factory=EnvCache)
    job: dict[str, str] = field(default_factory=dict)
    exclusive: bool = True
    command: str = "matrix"
    follow_up: FollowUp | None = None


@dataclass(frozen=True)
class CellsReport:
    """The cells' results in plan order (cells an interruption kept from running are
    SKIPPED), the legs they ran on, and where it is all written."""

    run: RunDir
    results: tuple[CellResult, ...]
    envs: dict[str, Env]
    failures: dict[str, EnvError]
    hygiene: HygieneSummary
    interrupted: bool

    @property
    def run_dir(self) -> Path:
        return self.run.path


def run_cells(
    recipe: Recipe,
    cells: Sequence[planmod.CellPlan],
    options: RunOptions,
    observer: Observer[CellsEvent] = ignore,
) -> CellsReport:
    """Build the cells' legs and run the cells; see the module's docstring."""
    if not is_measuring():
        raise VllmdiagError(
            "cells run only inside measuring() (the node lock and stop signals)",
            hint="wrap the job in 'with vllmdiag.spine.measuring.measuring():'",
        )
    RunReaders().check()
    return _Run(recipe, options, observer).execute(list(cells))


class _Run:
    scheduler: SlotScheduler  # set when the cells are placed

    def __init__(self, recipe: Recipe, options: RunOptions, observer: Observer[CellsEvent]):
        self.recipe = recipe
        self.opts = options

        def warn(text: str) -> None:
            observer(Note("warning", text))

        name = options.name or recipe.name
        if options.resume is not None:
            self.run = RunDir.resume(options.resume, recipe.name, warn, options.command)
        else:
            self.run = RunDir.create(
                name,
                out=options.out,
                runs_root=options.runs_root,
                warn=warn,
                command=options.command,
            )
        self.run_id = run_id_of(self.run) if options.resume else uuid.uuid4().hex[:16]
        self.run.keep_secret_digests()
        self.emit: Observer[CellsEvent] = fan_out(JournalSink(self.run), observer)
        self.readers = RunReaders()
        self.nodes: list[NodeLegs] = []
        self.cluster = False
        self.judges: dict[str, Judge] = {}
        self.results: dict[str, CellResult] = {}
        self.total = 0
        self.by_id: dict[str, NodeLegs] = {}
        self.plans: dict[str, planmod.CellPlan] = {}
        self.order: list[planmod.CellPlan] = []  # the plan's cells, then follow-ups
        self.pool: CellPool | None = None
        self.prior: dict[str, CellResult] = {}

    def execute(self, cells: list[planmod.CellPlan]) -> CellsReport:
        resumed = self.opts.resume is not None
        self.total = len(cells)
        self.emit(
            RunStarted(
                recipe=self.recipe.name,
                source=str(self.recipe.source),
                run_dir=self.run.path,
                cells=len(cells),
                resumed=resumed,
                host=host(),
                executor=self.opts.executor.name,
                run_id=self.run_id,
                job=dict(self.opts.job),
            )
        )
        strays = strays_ended()
        if strays:
            self.emit(LeftoversEnded(tuple(s.pid for s in strays), tuple(s.tag for s in strays)))
        interrupted = False
        try:
            nodes, self.cluster = nodes_for(self.opts.executor, self.opts.cache)
            if resumed:
                end_leftovers(self.run, self.run_id, nodes, self.opts.grace_s, self.emit)
            self.nodes = prepare_nodes(
                legs_per_node(nodes, cells, self.recipe, self.emit, cluster=self.cluster),
                self.recipe,
                self.run,
                self.emit,
                executor=self.opts.executor.name,
                allow_contaminated=self.opts.allow_contaminated,
                cluster=self.cluster,
            )
            self.order = list(cells)
            interrupted = self._run_all(cells, self.run.finished() if resumed else {})
        except KeyboardInterrupt:
            interrupted = True
        if interrupted:
            self.emit(RunFinished("interrupted", stopped_by() or "SIGINT"))
        else:
            self.emit(RunFinished("complete"))
        view = merged(self.nodes) if self.nodes else None
        return CellsReport(
            self.run,
            tuple(self.results.get(c.id) or skipped_result(c) for c in self.order or cells),
            view.envs if view else {},
            view.failures if view else {},
            view.hygiene if view else HygieneSummary(),
            interrupted,
        )

    def _run_all(self, cells: list[planmod.CellPlan], prior: dict[str, CellResult]) -> bool:
        scheduler = SlotScheduler(
            [NodeSlots(n.node.id, n.label or n.node.label, n.node.gpus) for n in self.nodes],
            exclusive=self.opts.exclusive,
        )
        self.by_id = {n.node.id: n for n in self.nodes}
        self.plans = {c.id: c for c in cells}
        self.prior = prior
        self.scheduler = scheduler
        jobs = []
        for index, cell in enumerate(cells, start=1):
            jobs += self._jobs(index, cell)
        self.pool = CellPool(scheduler, self.emit, self._start, self._finished, self._unrunnable)
        return self.pool.run(jobs)

    def _jobs(self, index: int, cell: planmod.CellPlan) -> list[Job]:
        """The cell's job, or, when it is settled already, the jobs of the cells it asks
        to follow it (a reused result's follow-ups run again, as after a first run)."""
        job = self._job(index, cell, self.prior.get(cell.id), self.scheduler)
        if job is not None:
            return [job]
        settled = self.results.get(cell.id)
        return self._follow(cell, settled) if settled is not None else []

    def _follow(self, cell: planmod.CellPlan, result: CellResult) -> list[Job]:
        if self.opts.follow_up is None:
            return []
        jobs = []
        at = next(i for i, c in enumerate(self.order) if c.id == cell.id) + 1
        for extra in self.opts.follow_up(cell, result):
            if extra.id in self.plans:
                continue
            self.plans[extra.id] = extra
            self.order.insert(at, extra)  # reported right after the cell that asked for it
            at += 1
            self.total += 1
            jobs += self._jobs(self.total, extra)
        return jobs

    def _job(
        self,
        index: int,
        cell: planmod.CellPlan,
        prior: CellResult | None,
        scheduler: SlotScheduler,
    ) -> Job | None:
        """The cell as a job waiting for a slot, or None when it is settled already: an
        error (no node has its leg, or none has the GPUs it needs) or reused."""
        need = gpus_needed(self.recipe, cell)
        key = cell.leg.key()
        eligible = frozenset(n.node.id for n in self.nodes if key in n.legs.envs)
        why = scheduler.unplaceable(need, scheduler.live())
        if why is None and not eligible:
            failure = merged(self.nodes).failures.get(key)
            reason = failure.render() if failure else "leg not built"
            self._finish(index, error_result(cell, f"leg {cell.leg.name}: {reason}"))
            return None
        why = why or scheduler.unplaceable(need, eligible)
        if why is not None:
            self._finish(index, error_result(cell, f"not run: {why}"))
            return None
        if prior is not None and prior.outcome.is_result:
            # the node that ran it first: its paths are the ones in the key
            for node_id in sorted(eligible, key=lambda i: self.by_id[i].label != prior.node):
                try:
                    key_there = self._on_node(cell, self.by_id[node_id]).key
                except NodeLost:
                    continue  # the run finds out when it places a cell there
                if key_there == prior.reuse_key:
                    self.results[cell.id] = prior
                    self.emit(CellReused(index, self.total, prior.id, prior))
                    return None
        return Job(index, cell.id, need, eligible, whole="CUDA_VISIBLE_DEVICES" in cell.env)

    def _on_node(self, cell: planmod.CellPlan, node: NodeLegs) -> CellOnNode:
        return on_node(self.recipe, self.run, self.run_id, cell, node)

    def _start(
        self, job: Job, placement: Placement, cancel: threading.Event
    ) -> Callable[[Observer[Any]], Finished]:
        """Journal the cell's start and hand its thread the work (see :class:`CellPool`)."""
        node = self.by_id[placement.node]
        c = self._on_node(self.plans[job.cell_id], node)
        cell = c.plan
        self.run.prepare_cell(cell.id)
        log = self.run.log_path(cell.id)
        self.emit(
            CellStarted(
                job.index,
                self.total,
                cell.id,
                cell.arm,
                cell.workload,
                cell.repeat,
                cell.leg.name,
                tuple(c.argv),
                dict(cell.env),
                c.key,
                c.env.lock_hash,
                log,
                node=node.label,
                gpus=placement.visible,
            )
        )
        task = CellTask(
            cell.id,
            tuple(c.argv),
            child_environ(c, placement, self.run_id),
            c.out_dir,
            log,
            self.recipe.timeout,
            self.opts.grace_s,
            python=c.env.python,
            node=node.node.id,
            collect=self.run.out_dir(cell.id) if node.node.remote else None,
            cancel=cancel,
        )
        judge = self._judge(node)
        return lambda relay: self._work(c, task, judge, relay)

    def _judge(self, node: NodeLegs) -> Judge:
        if node.node.id not in self.judges:
            self.judges[node.node.id] = Judge(
                self.recipe, self.run, self.readers, node.legs.hygiene
            )
        return self.judges[node.node.id]

    def _work(self, c: CellOnNode, task: CellTask, judge: Judge, relay: Observer[Any]) -> Finished:
        """On the cell's own thread: run it, then judge it from its log and outputs."""
        cell, node = c.plan, c.node

        def spawned(pid: int) -> None:
            ticks = None if node.node.remote else proc.start_ticks(pid)
            relay(CellSpawned(cell.id, pid, pid, pid, ticks, node=node.label))

        try:
            done = self.opts.executor.run(
                task, on_tick=lambda s: relay(CellTick(cell.id, s, task.log)), on_spawn=spawned
            )
        except NodeLost as exc:
            return Finished(self._on(node, error_result(cell, exc.message, c)), lost_node=exc.node)
        except ProcessError as exc:
            return Finished(self._on(node, error_result(cell, exc.render(), c)))
        if done.swept:
            relay(CellSwept(cell.id, done.swept))
        if done.interrupted:
            relay(CellInterrupted(cell.id, done.elapsed_s))
            return Finished(None)
        result = judge.judge(cell, done, c.key, c.env, c.argv, task.log, c.dialect)
        return Finished(self._on(node, result))

    def _on(self, node: NodeLegs, result: CellResult) -> CellResult:
        return dataclasses.replace(result, node=node.label) if self.cluster else result

    def _finished(self, job: Job, outcome: Finished) -> None:
        if outcome.result is not None:
            self._finish(job.index, outcome.result)
            more = self._follow(self.plans[job.cell_id], outcome.result)
            if more and self.pool is not None:
                self.pool.add(more)

    def _unrunnable(self, job: Job, why: str) -> None:
        self._finish(job.index, error_result(self.plans[job.cell_id], f"not run: {why}"))

    def _finish(self, index: int, result: CellResult) -> None:
        if result.argv:
            self.run.keep_recipe_files(self.recipe.recipe_dir, result.argv)
        self.run.write_result(result)
        self.results[result.id] = result
        self.emit(CellFinished(index, self.total, result.id, result))
