"""``vllmdiag profile capture --leg NAME=PATH ...``: one workload on existing
environments, no recipe.

The thin path beside a recipe's profile (:mod:`recipe_run`), on the same runner: the
targets become ``path:`` legs of a recipe of one workload (the command as given, its
braces kept literal), each (side, backend) one cell of
:func:`~vllmdiag.spine.runner.run_cells` with the profile's
:class:`~vllmdiag.jobs.profile.hooks.ProfileHooks`: legs checked for hygiene, each cell
run in its own process group, judged and journaled in ``run.jsonl`` as any cell
(``cells/<side>.<backend>/``), then ``profile.json``. The commands run in the directory
vllmdiag was started in (a script's relative paths mean what they meant there). A side
whose capture fails says why and the others' data is kept; a failed nsys capture is
followed by a torch one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Observer, ignore
from vllmdiag.jobs.profile.capture import Backend
from vllmdiag.jobs.profile.capture_task import CaptureWrap, Workload
from vllmdiag.jobs.profile.events import ProfileEvent, ProfileStarted
from vllmdiag.jobs.profile.hooks import ProfileHooks
from vllmdiag.jobs.profile.outcome import outcome_of
from vllmdiag.jobs.profile.results import ProfileOutcome
from vllmdiag.model.recipe import Baseline, LegConfig, Recipe, WorkloadConfig, check_name
from vllmdiag.model.verdict import BASELINE
from vllmdiag.plan.cells import CellPlan
from vllmdiag.services import proc
from vllmdiag.services.envs import EnvCache, LegSpec
from vllmdiag.spine.measuring import measuring
from vllmdiag.spine.runner import RunOptions, run_cells

#: The one workload of a capture run's recipe.
WORKLOAD = "capture"


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
        _check_side(name)
        env = (cache or EnvCache()).ensure(LegSpec(name, existing=Path(path).expanduser()))
        out.append(LegTarget(name, env.python))
    names = [t.name for t in out]
    if len(set(names)) != len(names):
        raise VllmdiagError(f"side names must differ: {', '.join(names)}",
                            hint="give each --leg its own NAME")  # fmt: skip
    return out


def _check_side(name: str) -> None:
    """A side names a leg and its cells' directories."""
    try:
        check_name("leg", name)
    except ValueError as exc:
        raise VllmdiagError(f"--leg {name}=...: {exc}", where="--leg") from None


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
    allow_contaminated: bool = False,
    cache: EnvCache | None = None,
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
    for name in names:
        _check_side(name)
    recipe = capture_recipe(targets, workload, timeout)
    what = shown(workload)
    sides = tuple(f"{t.name}: {t.python}" for t in targets)

    def started(run_dir: Path) -> ProfileStarted:
        return ProfileStarted(run_dir, sides, what, tuple(backends), workload.warmup,
                              workload.steps)  # fmt: skip

    hooks = ProfileHooks(CaptureWrap(workload.settings, workdir=Path.cwd()), backends, started)
    script = workload.script is not None
    cells = [hooks.cell(_side_cell(t, workload), t.name, b, script) for t in targets
             for b in backends]  # fmt: skip
    job = {"job": "profile capture", "workload": what, "sides": "; ".join(sides),
           "capture": ",".join(b.value for b in backends), "warmup": str(workload.warmup),
           "steps": str(workload.steps)}  # fmt: skip
    options = RunOptions(out=out, runs_root=runs_root, name="profile-capture", grace_s=grace_s,
                         allow_contaminated=allow_contaminated, cache=cache or EnvCache(),
                         job=job, command="profile capture")  # fmt: skip
    with measuring(wait=wait, observer=observer) as stop:
        ran = run_cells(recipe, cells, options, observer, hooks)
    captures = tuple(hooks.capture_of(r) for r in ran.results)
    stopped = (stop.signame or "SIGINT") if ran.interrupted else None
    return outcome_of(ran.run_dir, captures, top, cells=ran.results,
                      interrupted=ran.interrupted, stopped_by=stopped)  # fmt: skip


def capture_recipe(targets: Sequence[LegTarget], w: Workload, timeout: float) -> Recipe:
    """The recipe a capture run's cells belong to: each target a ``path:`` leg, the
    workload its one command (what the cells' commands are rendered from)."""
    try:
        return Recipe(
            name="profile-capture",
            question="where does the time go on each side?",
            legs={t.name: LegConfig(path=t.python) for t in targets},
            baseline=Baseline(leg=targets[0].name),
            workloads={WORKLOAD: WorkloadConfig(command=w.template(), env=dict(w.env))},
            timeout=timeout,
        )
    except ValidationError as exc:
        raise VllmdiagError(f"cannot capture this workload: {exc.errors()[0]['msg']}") from None


def _side_cell(target: LegTarget, w: Workload) -> CellPlan:
    """A side's cell before a backend is chosen (its id: the side's name)."""
    leg = LegSpec(target.name, existing=target.python)
    return CellPlan(target.name, BASELINE, WORKLOAD, 1, leg, dict(w.env))


def shown(w: Workload) -> str:
    """The workload as the journal names it."""
    return " ".join([str(w.script), *w.script_args] if w.script else w.argv)
