"""``vllmdiag profile capture --leg NAME=PATH ...``: one workload on existing
environments, no recipe.

The thin path beside a recipe's profile (:mod:`recipe_run`): the same capture executor,
the same run directory (``run.jsonl`` through :class:`~vllmdiag.spine.journal.RunDir` and
:class:`~vllmdiag.spine.journal.JournalSink`, ``cells/<side>.<backend>/`` per capture,
``profile.json``), the same events, under :func:`~vllmdiag.spine.measuring.measuring`; only
no recipe, so no cells are planned, judged or resumed. A side whose capture fails says
why and the others' data is kept; a failed nsys capture is followed by a torch one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note, Observer, fan_out, ignore
from vllmdiag.jobs.profile.capture import Backend, CaptureResult, CaptureUnavailable, fallback
from vllmdiag.jobs.profile.capture_executor import CaptureExecutor, CellCapture, Workload
from vllmdiag.jobs.profile.events import CaptureFallback, ProfileEvent, ProfileStarted
from vllmdiag.jobs.profile.outcome import outcome_of
from vllmdiag.jobs.profile.results import ProfileOutcome
from vllmdiag.services import proc
from vllmdiag.services.envs import EnvCache, LegSpec
from vllmdiag.spine.journal import JournalSink, RunDir
from vllmdiag.spine.measuring import measuring
from vllmdiag.spine.runner.executor import CellTask


@dataclass(frozen=True)
class LegTarget:
    """One side of a capture run: its name and the leg's python."""

    name: str
    python: Path


def targets_from_paths(values: Sequence[str], cache: EnvCache | None = None) -> list[LegTarget]:
    """``NAME=PATH`` of existing venvs (or their pythons), adopted through the env cache."""
    out = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise VllmdiagError(
                f"--leg takes NAME=PATH, not {value!r}",
                hint="e.g. --leg old=/opt/venvs/vllm-0.18 (a venv or its python)",
            )
        env = (cache or EnvCache()).ensure(LegSpec(name, existing=Path(path).expanduser()))
        out.append(LegTarget(name, env.python))
    names = [t.name for t in out]
    if len(set(names)) != len(names):
        raise VllmdiagError(f"side names must differ: {', '.join(names)}",
                            hint="give each --leg its own NAME")  # fmt: skip
    return out


def capture_legs(
    targets: Sequence[LegTarget],
    workload: Workload,
    backends: Sequence[Backend] = (Backend.TORCH,),
    *,
    out: Path | None = None,
    runs_root: Path = Path("runs"),
    top: int = 15,
    timeout: float = 3600,
    grace_s: float = proc.DEFAULT_GRACE_S,
    wait: bool = False,
    observer: Observer[ProfileEvent] = ignore,
) -> ProfileOutcome:
    """Capture ``workload`` on every target serially, then diff the first two sides."""
    if workload.script is None and not workload.argv:
        raise VllmdiagError("a workload needs a script or a command line")
    if not backends:
        raise VllmdiagError("no capture backend", hint="e.g. -c torch")
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        raise VllmdiagError(f"side names must differ: {', '.join(names)}")
    with measuring(wait=wait, observer=observer) as stop:
        run = RunDir.create("profile-capture", out=out, runs_root=runs_root,
                            warn=lambda text: observer(Note("warning", text)),
                            command="profile capture")  # fmt: skip
        emit: Observer[ProfileEvent] = fan_out(JournalSink(run), observer)
        what = shown(workload)
        sides = tuple(f"{t.name}: {t.python}" for t in targets)
        emit(ProfileStarted(run.path, sides, what, tuple(backends), workload.warmup,
                            workload.steps))  # fmt: skip
        executor = CaptureExecutor(workload.settings, emit, workdir=Path.cwd())
        captures: list[CaptureResult] = []
        interrupted = False
        try:
            for target in targets:
                todo = list(backends)
                while todo:
                    which = todo.pop(0)
                    got = _one(run, executor, target, workload, which, timeout, grace_s)
                    captures.append(got)
                    instead = fallback(which, got, backends)
                    if instead is not None:
                        emit(CaptureFallback(target.name, which, instead, got.reason or ""))
                        todo.insert(0, instead)
        except KeyboardInterrupt:
            interrupted = True
    return outcome_of(run.path, captures, top, emit, interrupted=interrupted,
                      stopped_by=(stop.signame or "SIGINT") if interrupted else None)  # fmt: skip


def shown(w: Workload) -> str:
    """The workload as the journal names it."""
    return " ".join([str(w.script), *w.script_args] if w.script else w.argv)


def _one(
    run: RunDir,
    executor: CaptureExecutor,
    target: LegTarget,
    w: Workload,
    which: Backend,
    timeout: float,
    grace_s: float,
) -> CaptureResult:
    cell = f"{target.name}.{which.dirname}"
    run.prepare_cell(cell)
    dest = run.out_dir(cell)
    executor.plan[cell] = CellCapture(target.name, which, script=w.script is not None)
    task = CellTask(cell, w.render(target.python, dest), w.environ(target.python), dest,
                    run.log_path(cell), timeout, grace_s, target.python)  # fmt: skip
    try:
        done = executor.run(task)
    except CaptureUnavailable:
        return executor.captures[cell]
    if done.interrupted:
        raise KeyboardInterrupt
    return executor.captures[cell]
