"""The falsification matrix: plan, build legs, run cells serially, journal, decide.

Everything that can be checked before running is checked before running: the recipe, the
arms, every cell's command. Then the node lock is taken, legs are built (a leg that fails
to build makes its cells ERROR, never FAIL), and cells run one at a time in their own
process groups. Each finished cell's result is written atomically before the next starts.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vllmdiag import proc
from vllmdiag.engine import plan as planmod
from vllmdiag.engine import workloads as wlmod
from vllmdiag.engine.events import (
    CellFinished,
    CellStarted,
    CellTick,
    Note,
    Observer,
    RunStarted,
    ignore,
)
from vllmdiag.engine.executor import CellTask, Executor, LocalExecutor
from vllmdiag.engine.journal import RunDir, host
from vllmdiag.engine.matrix_plan import plan
from vllmdiag.engine.readers import HygieneSummary, RunReaders
from vllmdiag.engine.vllm_cli import bench_dialect
from vllmdiag.envs.cache import Env, EnvCache
from vllmdiag.envs.spec import LegSpec
from vllmdiag.errors import EnvError, ProcessError, VllmdiagError
from vllmdiag.locks import file_lock
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import Recipe, WorkloadConfig
from vllmdiag.model.shape import WorkloadShape, shape_problem
from vllmdiag.model.verdict import MetricInfo, Verdict, decide
from vllmdiag.paths import node_lock_path


@dataclass
class MatrixOptions:
    out: Path | None = None
    resume: Path | None = None
    runs_root: Path = Path("runs")
    grace_s: float = proc.DEFAULT_GRACE_S
    allow_contaminated: bool = False
    wait: bool = False  # queue behind another matrix holding the node lock
    executor: Executor = field(default_factory=LocalExecutor)
    cache: EnvCache = field(default_factory=EnvCache)


#: What ``--json`` shows of each cell (``result.json`` in the run directory has it all).
CELL_KEYS = ("id", "arm", "workload", "repeat", "outcome", "rc", "elapsed_s", "metrics",
             "reason", "leg", "root_cause")  # fmt: skip


def _pick(d: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: d[k] for k in keys}


@dataclass(frozen=True)
class MatrixReport:
    recipe: Recipe
    run_dir: Path
    results: list[CellResult]
    verdict: Verdict
    envs: dict[str, dict[str, Any]]
    interrupted: bool = False
    #: The signal that stopped the run (``SIGINT``, ``SIGTERM``, ``SIGHUP``), if one did.
    stopped_by: str | None = None

    @property
    def cells_run(self) -> int:
        """Cells that produced a result (pass, fail or timeout), this run or reused."""
        return sum(r.outcome.is_result for r in self.results)

    def to_json(self) -> dict[str, Any]:
        verdict = self.verdict.to_json()
        return {
            "recipe": self.recipe.name,
            "question": self.recipe.question,
            "run_dir": str(self.run_dir),
            "interrupted": self.interrupted,
            "stopped_by": self.stopped_by,
            "cells": [_pick(r.to_json(), CELL_KEYS) for r in self.results],
            "envs": self.envs,
            "verdict": verdict,
        }


def run_matrix(recipe: Recipe, options: MatrixOptions, observer: Observer = ignore) -> MatrixReport:
    """Run ``recipe`` to its verdict. SIGTERM and SIGHUP stop it as Ctrl-C does: the
    running cell's whole tree is ended, the stop journaled, the verdict marked partial."""
    plan(recipe, options.cache)  # validates every command before anything runs

    def waiting(holder: str) -> None:
        observer(Note("info", f"waiting for the node lock (held by pid {holder})"))

    lock = file_lock(node_lock_path(), wait=options.wait, what="the node lock", on_wait=waiting)
    with proc.stop_signals() as stop, lock:
        report = MatrixRun(recipe, options, observer).execute()
    if report.interrupted:
        report = replace(report, stopped_by=stop.signame or "SIGINT")
    return report


class MatrixRun:
    """One run directory being filled: legs, hygiene, cells, verdict."""

    def __init__(self, recipe: Recipe, options: MatrixOptions, observer: Observer) -> None:
        self.recipe = recipe
        self.opts = options
        self.notify = observer

        def warn(text: str) -> None:
            observer(Note("warning", text))

        if options.resume is not None:
            self.run = RunDir.resume(options.resume, recipe.name, warn)
        else:
            self.run = RunDir.create(
                recipe.name, out=options.out, runs_root=options.runs_root, warn=warn
            )
        self.run_id = _run_id(self.run) if options.resume else uuid.uuid4().hex[:16]
        self.readers = RunReaders()
        self.envs: dict[str, Env] = {}
        self.env_errors: dict[str, str] = {}
        self.hygiene = HygieneSummary()

    def execute(self) -> MatrixReport:
        cells = planmod.expand(self.recipe)
        resumed = self.opts.resume is not None
        self.run.event(
            "run_started",
            recipe=self.recipe.name,
            source=str(self.recipe.source),
            cells=len(cells),
            resumed=resumed,
            host=host(),
            executor=self.opts.executor.name,
            run_id=self.run_id,
        )
        self.notify(RunStarted(self.run.path, len(cells), resumed))
        if resumed:
            self._end_leftovers()
        results: list[CellResult] = []
        interrupted = False
        try:
            self.build_legs(planmod.legs_needed(cells))
            self._hygiene()
            prior = self.run.finished() if resumed else {}
            for index, cell in enumerate(cells, start=1):
                result = self.run_cell(index, len(cells), cell, prior.get(cell.id))
                if result is None:
                    interrupted = True
                    break
                results.append(result)
        except KeyboardInterrupt:
            interrupted = True
        if interrupted:
            done = {r.id for r in results}
            results += [_skipped(c) for c in cells if c.id not in done]
        verdict = self._verdict(results)
        report = MatrixReport(
            self.recipe,
            self.run.path,
            results,
            verdict,
            {k: v.to_json() for k, v in self.envs.items()},
            interrupted,
        )
        from vllmdiag.engine.summary import write_summaries

        write_summaries(self.run, report)
        self.run.event(
            "run_finished",
            status="interrupted" if interrupted else "complete",
            verdict=verdict.to_json(),
        )
        return report

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
            self.run.event("leftovers_ended", pids=ended)
            self.notify(
                Note(
                    "warning",
                    f"ended {len(ended)} process(es) an earlier, killed run of this "
                    f"directory left running (pids {', '.join(map(str, ended))})",
                )
            )

    def build_legs(self, legs: Sequence[LegSpec]) -> None:
        for leg in legs:
            log = self.run.path / "envs" / f"{leg.key()}.log"
            try:
                env = self.opts.cache.ensure(leg, observer=self.notify, log=log)
            except (EnvError, ProcessError) as exc:
                self.env_errors[leg.key()] = exc.render()
                self.run.event("env_failed", leg=leg.name, key=leg.key(), error=exc.render())
                continue
            self.envs[leg.key()] = env
            self.run.event(
                "env_ready",
                leg=leg.name,
                key=leg.key(),
                path=str(env.path),
                lock_hash=env.lock_hash,
                reused=env.reused,
                stack=env.stack,
                gpu=env.gpu,
                pins=list(leg.pins),
            )
            self.run.write_json(f"envs/{leg.key()}.json", env.to_json())

    def _hygiene(self) -> None:
        findings = self.readers.hygiene(list(self.envs.values()), self.recipe)
        self.hygiene = findings
        self.run.write_json(
            "manifest.json",
            {
                "recipe": self.recipe.model_dump(mode="json", by_alias=True),
                "envs": {k: v.to_json() for k, v in self.envs.items()},
                "env_errors": self.env_errors,
                "hygiene": findings.to_json(),
                "executor": self.opts.executor.name,
            },
        )
        for line in findings.lines():
            self.notify(Note("warning", line))
        if findings.contaminated and not self.opts.allow_contaminated:
            self.run.event("run_refused", reason="contaminated leg", hygiene=findings.to_json())
            raise VllmdiagError(
                "a leg is contaminated: " + "; ".join(findings.contaminations()),
                where=str(self.run.path / "manifest.json"),
                hint="clean the leg, or pass --allow-contaminated to measure it anyway "
                "(the finding stays in the manifest)",
            )

    def run_cell(
        self, index: int, total: int, cell: planmod.CellPlan, prior: CellResult | None
    ) -> CellResult | None:
        env = self.envs.get(cell.leg.key())
        if env is None:
            reason = self.env_errors.get(cell.leg.key(), "leg not built")
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
        fp = planmod.fingerprint(cell, env.lock_hash, argv, cell.workload)
        if prior is not None and prior.fingerprint == fp and prior.outcome.is_result:
            self.run.event("cell_reused", id=cell.id, fingerprint=fp)
            self.notify(CellFinished(index, total, prior, reused=True))
            return prior
        self.run.prepare_cell(cell.id)
        log = self.run.log_path(cell.id)
        child_env = env.child_environ(proc.clean_environ())
        child_env.update(cell.env)
        child_env[proc.TAG_VAR] = f"{self.run_id}:{cell.id}"
        self.run.event(
            "cell_started",
            id=cell.id,
            arm=cell.arm,
            workload=cell.workload,
            repeat=cell.repeat,
            leg=cell.leg.name,
            argv=argv,
            env=cell.env,
            fingerprint=fp,
            lock_hash=env.lock_hash,
        )
        self.notify(CellStarted(index, total, cell.id, log))
        task = CellTask(
            cell.id, tuple(argv), child_env, out_dir, log, self.recipe.timeout, self.opts.grace_s
        )
        try:
            done = self.opts.executor.run(
                task,
                on_tick=lambda s: self.notify(CellTick(cell.id, s, log)),
                on_spawn=lambda pid: self.run.event(
                    "cell_spawned",
                    id=cell.id,
                    pid=pid,
                    pgid=pid,
                    sid=pid,
                    start_ticks=proc.start_ticks(pid),
                ),
            )
        except ProcessError as exc:
            return self._finish(index, total, _error(cell, exc.render(), fp, env, argv))
        if done.interrupted:
            self.run.event("cell_interrupted", id=cell.id, elapsed_s=done.elapsed_s)
            return None
        result = self._judge(cell, done.rc, done.elapsed_s, done.timed_out, fp, env, argv, log)
        return self._finish(index, total, result)

    def _judge(
        self,
        cell: planmod.CellPlan,
        rc: int | None,
        elapsed: float,
        timed_out: bool,
        fp: str,
        env: Env,
        argv: list[str],
        log: Path,
    ) -> CellResult:
        wl = self.recipe.workloads[cell.workload]
        specs = wlmod.specs_for(wl, self.recipe.metrics)
        metrics, missing = wlmod.extract(specs, self.run.out_dir(cell.id), log)
        required = {m.name for m in self.recipe.metrics_for(cell.workload)}
        reason = ""
        if timed_out:
            outcome, reason = Outcome.TIMEOUT, f"killed after {self.recipe.timeout:.0f}s"
        elif rc == 0:
            lacking = [m for m in missing if m.split(":", 1)[0] in required]
            outcome = Outcome.ERROR if lacking else Outcome.PASS
            reason = "; ".join(lacking)
        else:
            outcome, reason = Outcome.FAIL, f"exit status {rc}"
        root = self.readers.root_cause(log) if outcome in (Outcome.FAIL, Outcome.TIMEOUT) else None
        run_fp = self.readers.run_fingerprint(log, self.hygiene.notable(cell.leg.name))
        if outcome is Outcome.FAIL and root is not None and root.get("origin") == "tool":
            # A probe or launcher of vllmdiag broke: that is vllmdiag's bug, not the cell's.
            outcome = Outcome.ERROR
            frames = root.get("frames") or ["see the log"]
            ours = next((f for f in reversed(frames) if "vllmdiag" in f), frames[-1])
            reason = (
                "vllmdiag's own code failed, so this cell says nothing about the leg: "
                f"{root.get('type') or 'error'}: {root.get('message') or ''} "
                f"(at {ours}); please report it to vllmdiag"
            )
        if outcome is Outcome.PASS:
            problem, run_fp = self._shape(wl, argv, run_fp, cell.id)
            if problem:
                outcome, reason = Outcome.ERROR, problem
        return CellResult(
            id=cell.id,
            arm=cell.arm,
            workload=cell.workload,
            repeat=cell.repeat,
            outcome=outcome,
            rc=rc,
            elapsed_s=elapsed,
            metrics=metrics,
            fingerprint=fp,
            reason=reason,
            leg=cell.leg.name,
            lock_hash=env.lock_hash,
            argv=tuple(argv),
            root_cause=root,
            run_fingerprint=run_fp,
            log_path=str(log),
        )

    def _shape(
        self,
        wl: WorkloadConfig,
        argv: Sequence[str],
        run_fp: dict[str, Any] | None,
        cell_id: str,
    ) -> tuple[str | None, dict[str, Any] | None]:
        """Check the work the benchmark reports against what the recipe asked; the
        request count comes from the built-in's JSON (the log states only tokens)."""
        asked = wlmod.asked_shape(wl, argv)
        if asked is None or run_fp is None:
            return None, run_fp
        reported = run_fp.get("workload") or {}
        count, _ = wlmod.json_number(
            self.run.out_dir(cell_id) / wlmod.THROUGHPUT_JSON, "num_requests"
        )
        got = WorkloadShape(
            num_prompts=int(count) if count is not None else None,
            prompt_tokens=reported.get("prompt_tokens"),
            output_tokens=reported.get("output_tokens"),
            stated_mismatch=int(reported.get("stated_mismatch") or 0),
        )
        run_fp = {**run_fp, "workload": {**reported, "num_prompts": got.num_prompts}}
        if got.prompt_tokens is None and got.output_tokens is None and got.num_prompts is None:
            return None, run_fp
        return shape_problem(asked, got), run_fp

    def _finish(self, index: int, total: int, result: CellResult) -> CellResult:
        self.run.write_result(result)
        self.run.event(
            "cell_finished",
            id=result.id,
            outcome=result.outcome.value,
            rc=result.rc,
            elapsed_s=round(result.elapsed_s, 3),
            metrics=result.metrics,
            reason=result.reason,
        )
        self.notify(CellFinished(index, total, result))
        return result

    def _verdict(self, results: list[CellResult]) -> Verdict:
        metrics = {}
        for w in self.recipe.workloads:
            specs = self.recipe.metrics_for(w)
            if specs:
                metrics[w] = MetricInfo(specs[0].name, specs[0].better)
        inert = self.readers.inert_arms(self.recipe, results, self.envs)
        return decide(
            planmod.arm_infos(self.recipe),
            list(self.recipe.workloads),
            results,
            metrics=metrics or None,
            target=self.recipe.target,
            inert=inert,
        )


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
    fp: str = "",
    env: Env | None = None,
    argv: list[str] | None = None,
) -> CellResult:
    return CellResult(
        id=cell.id,
        arm=cell.arm,
        workload=cell.workload,
        repeat=cell.repeat,
        outcome=Outcome.ERROR,
        rc=None,
        elapsed_s=0.0,
        fingerprint=fp,
        reason=reason,
        leg=cell.leg.name,
        lock_hash=env.lock_hash if env else "",
        argv=tuple(argv or ()),
    )
