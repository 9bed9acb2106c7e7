"""``run_cells``: the one way vllmdiag runs cells, for every job (matrix, bisect,
profile, study).

Legs are built first (a leg that fails makes its cells ERROR), checked for hygiene, then
the cells run one at a time, each in its own process group, through an
:class:`~vllmdiag.runner.executor.Executor`. Each finished cell's result is written
atomically before the next starts, so a run killed at any instant loses nothing that had
finished; ``--resume`` reuses a finished result whose reuse key still matches and ends
what a SIGKILLed earlier run left behind. It runs only inside
:func:`vllmdiag.measuring.measuring` (the node lock, stop signals).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vllmdiag import proc
from vllmdiag.envs.cache import Env, EnvCache
from vllmdiag.errors import EnvError, ProcessError, VllmdiagError
from vllmdiag.events import Note, Observer, fan_out, ignore
from vllmdiag.journal import JournalSink, RunDir, host
from vllmdiag.measuring import is_measuring, stopped_by
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import cells as planmod
from vllmdiag.plan import workloads as wlmod
from vllmdiag.runner.events import (
    CellFinished,
    CellInterrupted,
    CellReused,
    CellsEvent,
    CellSpawned,
    CellStarted,
    CellTick,
    LeftoversEnded,
    RunFinished,
    RunStarted,
)
from vllmdiag.runner.executor import CellTask, Executor, LocalExecutor
from vllmdiag.runner.judge import Judge
from vllmdiag.runner.legs import Legs, build_legs, check_hygiene
from vllmdiag.runner.readers import HygieneSummary, RunReaders
from vllmdiag.runner.vllm_cli import bench_dialect

#: Cells a finished (or reused) cell asks for, run right after it on legs already built
#: (e.g. a profile capture that fell back to another profiler).
FollowUp = Callable[[planmod.CellPlan, CellResult], Sequence[planmod.CellPlan]]


@dataclass(frozen=True)
class RunOptions:
    """Where and how cells run. ``name``: the run directory's prefix (default: the
    recipe's name); ``job``: what the job adds to the journal's ``run_started``;
    ``follow_up``: see :data:`FollowUp`."""

    out: Path | None = None
    resume: Path | None = None
    runs_root: Path = Path("runs")
    name: str | None = None
    grace_s: float = proc.DEFAULT_GRACE_S
    allow_contaminated: bool = False
    executor: Executor = field(default_factory=LocalExecutor)
    cache: EnvCache = field(default_factory=EnvCache)
    job: dict[str, str] = field(default_factory=dict)
    #: The vllmdiag command that resumes this run (for the hints a stopped run prints).
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
            hint="wrap the job in 'with vllmdiag.measuring.measuring():'",
        )
    return _Run(recipe, options, observer).execute(list(cells))


class _Run:
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
        self.run_id = _run_id(self.run) if options.resume else uuid.uuid4().hex[:16]
        self.emit: Observer[CellsEvent] = fan_out(JournalSink(self.run), observer)
        self.readers = RunReaders()
        self.legs = Legs()

    def execute(self, cells: list[planmod.CellPlan]) -> CellsReport:
        resumed = self.opts.resume is not None
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
        if resumed:
            self._end_leftovers()
        results: list[CellResult] = []
        interrupted = False
        try:
            self.legs = build_legs(planmod.legs_needed(cells), self.run, self.opts.cache, self.emit)
            check_hygiene(
                self.legs,
                self.recipe,
                self.run,
                self.readers,
                self.opts.executor.name,
                self.emit,
                allow_contaminated=self.opts.allow_contaminated,
            )
            judge = Judge(self.recipe, self.run, self.readers, self.legs.hygiene)
            prior = self.run.finished() if resumed else {}
            index = 0
            while index < len(cells):
                cell = cells[index]
                index += 1
                result = self._cell(index, len(cells), cell, prior.get(cell.id), judge)
                if result is None:
                    interrupted = True
                    break
                results.append(result)
                if self.opts.follow_up is not None:
                    cells[index:index] = self.opts.follow_up(cell, result)
        except KeyboardInterrupt:
            interrupted = True
        if interrupted:
            done = {r.id for r in results}
            results += [_skipped(c) for c in cells if c.id not in done]
        if interrupted:
            self.emit(RunFinished("interrupted", stopped_by() or "SIGINT"))
        else:
            self.emit(RunFinished("complete"))
        return CellsReport(
            self.run,
            tuple(results),
            self.legs.envs,
            self.legs.failures,
            self.legs.hygiene,
            interrupted,
        )

    def _end_leftovers(self) -> None:
        """End what an earlier vllmdiag, killed before it could clean up, left running
        for this run directory: processes carrying its cell tag, and the sessions its
        cells were started in (a pid reused since is told apart by its start time)."""
        found = set(proc.tagged(f"{self.run_id}:"))
        for ev in self.run.events():
            if ev.get("event") == "cell_spawned" and isinstance(ev.get("pid"), int):
                found |= proc.session_members(ev["pid"], int(ev.get("start_ticks") or 0))
        ended = sorted(proc.end(found, self.opts.grace_s))
        if ended:
            self.emit(LeftoversEnded(tuple(ended)))
            self.emit(
                Note(
                    "warning",
                    f"ended {len(ended)} process(es) an earlier, killed run of this "
                    f"directory left running (pids {', '.join(map(str, ended))})",
                )
            )

    def _cell(
        self,
        index: int,
        total: int,
        cell: planmod.CellPlan,
        prior: CellResult | None,
        judge: Judge,
    ) -> CellResult | None:
        """Run one cell (or reuse its earlier result); None when the run was stopped."""
        env = self.legs.envs.get(cell.leg.key())
        if env is None:
            failure = self.legs.failures.get(cell.leg.key())
            reason = failure.render() if failure else "leg not built"
            return self._finish(index, total, _error(cell, f"leg {cell.leg.name}: {reason}"))
        out_dir = self.run.out_dir(cell.id)
        wl = self.recipe.workloads[cell.workload]
        dialect = (
            bench_dialect(env.python, cell.env.get("PYTHONPATH", ""))
            if wl.builtin is not None
            else wlmod.CURRENT
        )
        argv = wlmod.render(
            wl,
            name=cell.workload,
            flags=cell.flags,
            out_dir=out_dir,
            recipe_dir=self.recipe.recipe_dir,
            python=env.python,
            dialect=dialect,
        )
        key = planmod.reuse_key(cell, env.lock_hash, argv, cell.workload)
        if prior is not None and prior.reuse_key == key and prior.outcome.is_result:
            self.emit(CellReused(index, total, prior.id, prior))
            return prior
        self.run.prepare_cell(cell.id)
        log = self.run.log_path(cell.id)
        child_env = env.child_environ(proc.clean_environ())
        child_env.update(cell.env)
        child_env[proc.TAG_VAR] = f"{self.run_id}:{cell.id}"
        self.emit(
            CellStarted(
                index,
                total,
                cell.id,
                cell.arm,
                cell.workload,
                cell.repeat,
                cell.leg.name,
                tuple(argv),
                dict(cell.env),
                key,
                env.lock_hash,
                log,
            )
        )
        task = CellTask(
            cell.id,
            tuple(argv),
            child_env,
            out_dir,
            log,
            self.recipe.timeout,
            self.opts.grace_s,
            env.python,
        )
        try:
            done = self.opts.executor.run(
                task,
                on_tick=lambda s: self.emit(CellTick(cell.id, s, log)),
                on_spawn=lambda pid: self.emit(
                    CellSpawned(cell.id, pid, pid, pid, proc.start_ticks(pid))
                ),
            )
        except ProcessError as exc:
            return self._finish(index, total, _error(cell, exc.render(), key, env, argv))
        if done.interrupted:
            self.emit(CellInterrupted(cell.id, done.elapsed_s))
            return None
        result = judge.judge(cell, done, key, env, argv, log)
        return self._finish(index, total, result)

    def _finish(self, index: int, total: int, result: CellResult) -> CellResult:
        self.run.write_result(result)
        self.emit(CellFinished(index, total, result.id, result))
        return result


def _run_id(run: RunDir) -> str:
    """The id an earlier start of this run directory gave it (older journals have none:
    then one derived from the directory, stable across resumes)."""
    for ev in run.events():
        if ev.get("event") == "run_started" and isinstance(ev.get("run_id"), str):
            return str(ev["run_id"])
    return hashlib.sha256(str(run.path.resolve()).encode()).hexdigest()[:16]


def _skipped(cell: planmod.CellPlan) -> CellResult:
    return CellResult(
        id=cell.id,
        arm=cell.arm,
        workload=cell.workload,
        repeat=cell.repeat,
        outcome=Outcome.SKIPPED,
        rc=None,
        elapsed_s=0.0,
        reason="not run: the run was interrupted",
        leg=cell.leg.name,
    )


def _error(
    cell: planmod.CellPlan,
    reason: str,
    key: str = "",
    env: Env | None = None,
    argv: Sequence[str] = (),
) -> CellResult:
    return CellResult(
        id=cell.id,
        arm=cell.arm,
        workload=cell.workload,
        repeat=cell.repeat,
        outcome=Outcome.ERROR,
        rc=None,
        elapsed_s=0.0,
        reuse_key=key,
        reason=reason,
        leg=cell.leg.name,
        lock_hash=env.lock_hash if env else "",
        argv=tuple(argv),
    )
