"""``vllmdiag profile RECIPE --legs A B | --arms A B``: a recipe's two sides, captured.

Each (side, backend) is one cell of the recipe (:mod:`sides`), run through the cell runner
(:func:`~vllmdiag.spine.runner.run_cells`) under :func:`~vllmdiag.spine.measuring.measuring` with a
:class:`~vllmdiag.jobs.profile.capture_executor.CaptureExecutor`: legs built and hygiene-checked,
each cell journaled, judged and resumable exactly as a matrix cell. An nsys capture that
fails is followed by a torch capture of its side (unless torch was asked for anyway).
Then ``profile.json`` records the captures the cells left in their output directories,
and the first two sides are diffed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from vllmdiag.errors import ConfigError
from vllmdiag.events import Note, Observer, ignore
from vllmdiag.jobs.profile.capture import Backend, CaptureResult, CaptureSettings, fallback
from vllmdiag.jobs.profile.capture_executor import CaptureExecutor, CellCapture, read_record
from vllmdiag.jobs.profile.events import OWN_EVENTS, CaptureFallback, ProfileEvent, ProfileStarted
from vllmdiag.jobs.profile.outcome import outcome_of
from vllmdiag.jobs.profile.results import ProfileOutcome
from vllmdiag.jobs.profile.sides import Side, plan_sides
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import CellPlan, command
from vllmdiag.services import proc
from vllmdiag.services.envs.cache import EnvCache
from vllmdiag.spine.journal import JournalSink, RunDir
from vllmdiag.spine.measuring import measuring
from vllmdiag.spine.runner import RunOptions, run_cells
from vllmdiag.spine.runner.events import CellsEvent, RunStarted


@dataclass(frozen=True)
class ProfileRequest:
    """A recipe's profile: which sides (``legs``, or ``arms`` on ``leg``), which
    workload, which backends, and where and how the cells run."""

    recipe: Recipe
    legs: tuple[str, ...] = ()
    arms: tuple[str, ...] = ()
    leg: str | None = None
    workload: str | None = None
    backends: tuple[Backend, ...] = (Backend.TORCH,)
    settings: CaptureSettings = field(default_factory=CaptureSettings)
    top: int = 15
    out: Path | None = None
    resume: Path | None = None
    runs_root: Path = Path("runs")
    grace_s: float = proc.DEFAULT_GRACE_S
    allow_contaminated: bool = False
    wait: bool = False  # queue behind another job holding the node lock
    cache: EnvCache = field(default_factory=EnvCache)


def profile_recipe(
    req: ProfileRequest, observer: Observer[ProfileEvent] = ignore
) -> ProfileOutcome:
    """Capture the request's two sides and diff them (see the module's docstring)."""
    sides = plan_sides(req.recipe, req.legs, req.arms, req.leg, req.workload)
    for side in sides:  # a bad placeholder is a ConfigError before anything runs
        command.check(req.recipe.workloads[side.cell.workload], name=side.cell.workload,
                      flags=side.flags, recipe_dir=req.recipe.recipe_dir)  # fmt: skip
    if not req.backends:
        raise ConfigError("no capture backend", hint="e.g. -c torch")
    job = _Profile(req, sides, observer)
    if req.resume is not None:
        job.check_resumable(req.resume)
    with measuring(wait=req.wait, observer=job.emit) as stop:
        ran = run_cells(req.recipe, job.cells, job.options(), job.observe)
    captures = tuple(job.capture_of(r) for r in ran.results)
    return outcome_of(
        ran.run_dir,
        captures,
        req.top,
        job.emit,
        cells=ran.results,
        interrupted=ran.interrupted,
        stopped_by=(stop.signame or "SIGINT") if ran.interrupted else None,
    )


class _Profile:
    """The job's cells, its executor, and the journal of its own events."""

    def __init__(
        self, req: ProfileRequest, sides: Sequence[Side], observer: Observer[ProfileEvent]
    ) -> None:
        self.req = req
        self.sides = sides
        self.observer = observer
        self.executor = CaptureExecutor(req.settings, self.emit)
        self.planned: dict[str, tuple[Side, Backend]] = {}
        self.cells = [self._cell(s, b) for s in sides for b in req.backends]
        self.journal: JournalSink | None = None
        self.run: RunDir | None = None

    def job(self) -> dict[str, str]:
        """What ``run_started`` records of this profile (a resume must ask the same)."""
        return {
            "job": "profile",
            "workload": self.sides[0].cell.workload,
            "sides": "; ".join(s.describe() for s in self.sides),
            "capture": ",".join(b.value for b in self.req.backends),
            "warmup": str(self.req.settings.warmup),
            "steps": str(self.req.settings.steps),
        }

    def options(self) -> RunOptions:
        r = self.req
        return RunOptions(out=r.out, resume=r.resume, runs_root=r.runs_root,
                          name=f"profile-{r.recipe.name}", grace_s=r.grace_s,
                          allow_contaminated=r.allow_contaminated, executor=self.executor,
                          cache=r.cache, job=self.job(), follow_up=self.follow_up,
                          command="profile")  # fmt: skip

    def check_resumable(self, path: Path) -> None:
        """A run resumes only with the sides, workload and capture settings it began
        with (a capture made with other settings is not the same measurement)."""
        events = RunDir.resume(path, self.req.recipe.name, command="profile").events()
        began = next((e.get("job") for e in events if e.get("event") == "run_started"), None)
        asked = self.job()
        if not isinstance(began, dict) or began.get("job") != "profile":
            raise ConfigError("not a profile run directory", where=str(path),
                              hint="resume a run 'vllmdiag profile RECIPE' made")  # fmt: skip
        differ = [k for k in asked if began.get(k) != asked[k]]
        if differ:
            was = ", ".join(f"{k}: {began.get(k)!r}" for k in differ)
            raise ConfigError(
                f"this run was started with other options ({was})",
                where=str(path),
                hint="resume it with the options it began with, or start a new run",
            )

    def _cell(self, side: Side, which: Backend) -> CellPlan:
        cell = replace(side.cell, id=f"{side.cell.id}.{which.dirname}")
        self.executor.plan[cell.id] = CellCapture(side.name, which)
        self.planned[cell.id] = (side, which)
        return cell

    def emit(self, event: ProfileEvent) -> None:
        """The profile's own events: journaled (once the run directory exists) and shown."""
        if self.journal is not None and isinstance(event, (*OWN_EVENTS, Note)):
            self.journal(event)
        self.observer(event)

    def observe(self, event: CellsEvent) -> None:
        """The runner's events (it journals them itself): shown; its start opens the
        journal of the profile's own events in the same ``run.jsonl``."""
        self.observer(event)
        if isinstance(event, RunStarted):
            self.run = RunDir(event.run_dir)
            self.journal = JournalSink(self.run)
            self.emit(ProfileStarted(event.run_dir, tuple(s.describe() for s in self.sides),
                                     self.sides[0].cell.workload, self.req.backends,
                                     self.req.settings.warmup,
                                     self.req.settings.steps))  # fmt: skip

    def follow_up(self, cell: CellPlan, result: CellResult) -> list[CellPlan]:
        """A side whose nsys capture failed is captured with torch next."""
        side, which = self.planned[cell.id]
        captured = self._captured(result)
        instead = fallback(which, captured, self.req.backends) if captured else None
        if captured is None or instead is None:
            return []
        self.emit(CaptureFallback(side.name, which, instead, captured.reason or ""))
        return [self._cell(side, instead)]

    def _captured(self, result: CellResult) -> CaptureResult | None:
        """The cell's capture: made by this run, else (a result reused on resume) its
        record; None when the cell never captured (its leg failed, the run stopped)."""
        made = self.executor.captures.get(result.id)
        if made is not None or not result.outcome.is_result or self.run is None:
            return made
        found = read_record(self.run.out_dir(result.id))
        if found is None:
            return None
        return replace(found, out=self.run.out_dir(result.id), log=self.run.log_path(result.id))

    def capture_of(self, result: CellResult) -> CaptureResult:
        """What a cell's capture came to; a cell that never captured is a failed capture
        saying why."""
        found = self._captured(result)
        if found is not None:
            return found
        assert self.run is not None
        side, which = self.planned[result.id]
        reason = result.reason or f"the cell ended {result.outcome.value}"
        return CaptureResult(side.name, which, False, self.run.out_dir(result.id), (), reason,
                             0.0, self.run.log_path(result.id), cell=result.id)  # fmt: skip
