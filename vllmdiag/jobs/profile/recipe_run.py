"""``vllmdiag profile RECIPE --legs A B | --arms A B``: a recipe's two sides, captured.

Each (side, backend) is one cell of the recipe (:mod:`sides`), run through the cell runner
(:func:`~vllmdiag.spine.runner.run_cells`) under :func:`~vllmdiag.spine.measuring.measuring`
with the profile's :class:`~vllmdiag.jobs.profile.hooks.ProfileHooks`: legs built and
hygiene-checked, each cell journaled, judged and resumable exactly as a matrix cell, its
command wrapped under the profiler. An nsys capture that fails is followed by a torch
capture of its side (unless torch was asked for anyway).
Then ``profile.json`` records the captures the cells left in their output directories,
and the first two sides are diffed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vllmdiag.errors import ConfigError
from vllmdiag.events import Observer, ignore
from vllmdiag.jobs.profile.capture import Backend, CaptureSettings
from vllmdiag.jobs.profile.capture_task import CaptureWrap
from vllmdiag.jobs.profile.events import ProfileEvent, ProfileStarted
from vllmdiag.jobs.profile.hooks import ProfileHooks
from vllmdiag.jobs.profile.outcome import outcome_of
from vllmdiag.jobs.profile.results import ProfileOutcome
from vllmdiag.jobs.profile.sides import Side, plan_sides
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import command
from vllmdiag.services import proc
from vllmdiag.services.envs.cache import EnvCache
from vllmdiag.spine.measuring import measuring
from vllmdiag.spine.rundir import RunDir, starts
from vllmdiag.spine.runner import RunOptions, run_cells


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
    job = _Profile(req, sides)
    if req.resume is not None:
        job.check_resumable(req.resume)
    with measuring(wait=req.wait, observer=observer) as stop:
        ran = run_cells(req.recipe, job.cells, job.options(), observer, job.hooks)
    captures = tuple(job.hooks.capture_of(r) for r in ran.results)
    return outcome_of(
        ran.run_dir,
        captures,
        req.top,
        cells=ran.results,
        interrupted=ran.interrupted,
        stopped_by=(stop.signame or "SIGINT") if ran.interrupted else None,
    )


class _Profile:
    """The job's cells, its hooks, and what its run records of it."""

    def __init__(self, req: ProfileRequest, sides: Sequence[Side]) -> None:
        self.req = req
        self.sides = sides
        self.hooks = ProfileHooks(CaptureWrap(req.settings), req.backends, self._started)
        self.cells = [self.hooks.cell(s.cell, s.name, b) for s in sides for b in req.backends]

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
                          allow_contaminated=r.allow_contaminated, cache=r.cache,
                          job=self.job(), command="profile")  # fmt: skip

    def _started(self, run_dir: Path) -> ProfileStarted:
        return ProfileStarted(run_dir, tuple(s.describe() for s in self.sides),
                              self.sides[0].cell.workload, self.req.backends,
                              self.req.settings.warmup, self.req.settings.steps)  # fmt: skip

    def check_resumable(self, path: Path) -> None:
        """A run resumes only with the sides, workload and capture settings it began
        with (a capture made with other settings is not the same measurement)."""
        journal = RunDir.resume(path, self.req.recipe.name, command="profile").journal()
        began = next((s.job for s in starts(journal)), None)
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
