"""What a cell came to, from how its process ended and what it left.

- killed at the timeout: TIMEOUT, whose root cause says where it hung (its stack dump,
  the start-up phase it got through, how long its log had been silent);
- exit 0: PASS, unless a metric the recipe needs is missing, or the workload did not
  take the shape the recipe asked (then ERROR: nothing a verdict can use);
- any other exit: FAIL, with the root cause from its log; unless that root cause lies in
  vllmdiag's own code (a probe, a launcher): then ERROR, never a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from vllmdiag.model.fingerprint import Fingerprint
from vllmdiag.model.outcome import CauseSummary, CellResult, Outcome
from vllmdiag.model.recipe import Recipe, WorkloadConfig
from vllmdiag.model.shape import WorkloadShape, shape_problem
from vllmdiag.plan import workloads as wlmod
from vllmdiag.plan.bench_command import CURRENT, BenchDialect
from vllmdiag.plan.cells import CellPlan
from vllmdiag.readers import workload_output as output
from vllmdiag.services.envs.cache import Env
from vllmdiag.spine.journal import RunDir
from vllmdiag.spine.runner.executor import CellRun
from vllmdiag.spine.runner.hang_cause import hang_cause, hang_report
from vllmdiag.spine.runner.readers import HygieneSummary, RunReaders


class Judge:
    def __init__(
        self, recipe: Recipe, run: RunDir, readers: RunReaders, hygiene: HygieneSummary
    ) -> None:
        self.recipe = recipe
        self.run = run
        self.readers = readers
        self.hygiene = hygiene

    def judge(
        self,
        cell: CellPlan,
        done: CellRun,
        reuse_key: str,
        env: Env,
        argv: Sequence[str],
        log: Path,
        dialect: BenchDialect = CURRENT,
    ) -> CellResult:
        wl = self.recipe.workloads[cell.workload]
        specs = wlmod.specs_for(wl, self.recipe.metrics)
        metrics, missing = output.extract(specs, self.run.out_dir(cell.id), log)
        required = {m.name for m in self.recipe.metrics_for(cell.workload)}
        reason = ""
        if done.timed_out:
            outcome, reason = Outcome.TIMEOUT, f"killed after {self.recipe.timeout:.0f}s"
        elif done.rc == 0:
            lacking = [str(m) for m in missing if m.name in required]
            outcome = Outcome.ERROR if lacking else Outcome.PASS
            reason = "; ".join(lacking)
        else:
            outcome, reason = Outcome.FAIL, f"exit status {done.rc}"
        root = (
            self.readers.root_cause(log, (str(self.run.path),))
            if outcome in (Outcome.FAIL, Outcome.TIMEOUT)
            else None
        )
        fp, unreadable = self.readers.fingerprint(log, self.hygiene.notable(cell.leg.name))
        hang = None
        if outcome is Outcome.TIMEOUT:
            startup = fp.startup if fp is not None else None
            hang = hang_report(log.parent, self.recipe.timeout, startup)
            root = hang_cause(hang, root)
        if outcome is Outcome.FAIL and root is not None and root.is_tool_error:
            outcome, reason = Outcome.ERROR, tool_failure(root)
        warned: tuple[str, ...] = ()
        if outcome is Outcome.PASS:
            problem, fp = self._shape(wl, argv, fp, cell.id, log, dialect)
            if problem:
                outcome, reason = Outcome.ERROR, problem
            else:
                seconds = output.timed_region(wl, argv, self.run.out_dir(cell.id), log)
                short = wlmod.short_region(seconds)
                warned = (short,) if short else ()
        notes = tuple(x for x in (unreadable, root.reader_error if root else None) if x)
        return CellResult(
            id=cell.id,
            arm=cell.arm,
            workload=cell.workload,
            repeat=cell.repeat,
            outcome=outcome,
            rc=done.rc,
            elapsed_s=done.elapsed_s,
            metrics=metrics,
            reuse_key=reuse_key,
            reason=reason,
            leg=cell.leg.name,
            lock_hash=env.lock_hash,
            argv=tuple(argv),
            root_cause=root,
            fingerprint=fp,
            log=str(log),
            notes=notes,
            warnings=warned,
            hang=hang,
        )

    def _shape(
        self,
        wl: WorkloadConfig,
        argv: Sequence[str],
        fp: Fingerprint | None,
        cell_id: str,
        log: Path,
        dialect: BenchDialect,
    ) -> tuple[str | None, Fingerprint | None]:
        """Check the work the benchmark reports against what the recipe (or its ``vllm
        bench`` command) asked; the request count comes from the throughput JSON (the
        log states only tokens), a serve run's totals from its result block."""
        asked = wlmod.asked_shape(wl, argv, dialect)
        if asked is None or fp is None:
            return None, fp
        reported = fp.workload or output.serve_shape(log) or WorkloadShape()
        bench_json = wlmod.bench_json(wl, argv, self.run.out_dir(cell_id))
        count = output.json_number(bench_json, "num_requests")[0] if bench_json else None
        got = WorkloadShape(
            num_prompts=int(count) if count is not None else reported.num_prompts,
            prompt_tokens=reported.prompt_tokens,
            output_tokens=reported.output_tokens,
            stated_mismatch=reported.stated_mismatch,
        )
        if got == WorkloadShape():
            return None, fp
        return shape_problem(asked, got), replace(fp, workload=got)


def tool_failure(root: CauseSummary) -> str:
    """Why a cell whose root cause is in vllmdiag's own code is an ERROR."""
    where = root.why or (root.frames[-1] if root.frames else "see the log")
    return (
        "vllmdiag's own code failed, so this cell says nothing about the leg: "
        f"{root.type or 'error'}: {root.message or ''} ({where}); please report it to "
        "vllmdiag"
    )
