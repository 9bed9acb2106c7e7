"""CLI: ``vllmdiag profile RECIPE --legs A B | --arms A B [--leg L]``: a recipe's workload
captured on two sides (as cells, under the node lock), then diffed.

Arguments are parsed here and the outcome rendered by :mod:`profile_cmd`'s ``finish``;
the job is :func:`vllmdiag.jobs.profile.recipe_run.profile_recipe`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vllmdiag.cli import profile_render as show
from vllmdiag.cli.forms import ResumeDirForm
from vllmdiag.cli.output import JsonOption, human, user_errors, warn_lines
from vllmdiag.cli.profile_cmd import (
    CaptureOpt,
    StepsOpt,
    TopOpt,
    WarmupOpt,
    finish,
    profile_app,
)
from vllmdiag.cli.run_opts import (
    AllowContaminatedOption,
    GraceOption,
    RunsRootOption,
    WaitOption,
    run_options,
)
from vllmdiag.cli.values import path_value
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.profile import CaptureSettings, backend
from vllmdiag.model.recipe import ProfileWindow
from vllmdiag.plan.bench_check import recipe_warnings
from vllmdiag.services.config import load_recipe

if TYPE_CHECKING:
    from vllmdiag.jobs.profile import ProfileRequest


def run_cmd(
    recipe: Path = typer.Argument(..., help="The recipe YAML."),
    legs: list[str] = typer.Option(
        [], "--legs", help="Two legs of the recipe (the baseline's flags on each)."
    ),
    arms: list[str] = typer.Option(
        [],
        "--arms",
        help="Two arms on one leg: 'baseline' and/or arm names (the recipe's, else the library's).",
    ),
    on_leg: str | None = typer.Option(
        None, "--leg", help="With --arms: the leg (default: the baseline's)."
    ),
    workload: str | None = typer.Option(
        None, "--workload", "-w", help="The recipe workload to run (needed when it has several)."
    ),
    capture: list[str] = CaptureOpt,
    warmup: int | None = WarmupOpt,
    steps: int | None = StepsOpt,
    out: Path | None = typer.Option(
        None,
        "--out",
        parser=path_value,
        help="A new run directory (default: one under --runs-root).",
    ),
    resume: Path | None = typer.Option(
        None,
        "--resume",
        parser=path_value,
        metavar="DIR",
        help="Finish an interrupted profile run in its directory: finished captures are kept.",
    ),
    runs_root: Path = RunsRootOption,
    grace: float = GraceOption,
    allow_contaminated: bool = AllowContaminatedOption,
    wait: bool = WaitOption,
    top: int = TopOpt,
    as_json: bool = JsonOption,
) -> None:
    """Profile a recipe's workload on two sides (``vllmdiag profile RECIPE``)."""
    from vllmdiag.jobs.profile import ProfileRequest, profile_recipe

    with user_errors():
        if resume is not None and out is not None:
            raise VllmdiagError(
                "--resume and --out both name a run directory",
                hint="--resume DIR continues that run in place; drop --out",
            )
        rec = load_recipe(recipe)
        warn_lines(human(as_json), recipe_warnings(rec))
        req = ProfileRequest(
            recipe=rec,
            legs=_split(legs),
            arms=_split(arms),
            leg=on_leg,
            workload=workload,
            backends=tuple(backend(c) for c in capture),
            settings=window(rec.profile, warmup, steps),
            top=top,
            out=out,
            resume=resume,
            run=run_options(
                runs_root=runs_root, grace=grace, allow_contaminated=allow_contaminated, wait=wait
            ),
        )
        with show.ProfileView(human(as_json)) as view:
            outcome = profile_recipe(req, view)
        again = ["vllmdiag", "profile", str(recipe), *_sides_args(req), "--resume",
                 str(outcome.run.out)]  # fmt: skip
        finish(outcome, as_json, again)


def window(asked: ProfileWindow | None, warmup: int | None, steps: int | None) -> CaptureSettings:
    """The capture window: the command line's, else the recipe's, else the defaults."""
    d = CaptureSettings()
    return CaptureSettings(
        warmup if warmup is not None else (asked.warmup if asked and asked.warmup is not None
                                           else d.warmup),
        steps if steps is not None else (asked.steps if asked and asked.steps is not None
                                         else d.steps),
    )  # fmt: skip


def _sides_args(req: ProfileRequest) -> list[str]:
    """The options that name the request's sides and captures (for the resume hint)."""
    out = ["--legs", *req.legs] if req.legs else ["--arms", *req.arms]
    if req.leg:
        out += ["--leg", req.leg]
    if req.workload:
        out += ["--workload", req.workload]
    for b in req.backends:
        out += ["-c", b.value]
    return [*out, "--warmup", str(req.settings.warmup), "--steps", str(req.settings.steps)]


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(p for v in values for p in v.split(",") if p)


def register(app: typer.Typer) -> None:
    """Add ``vllmdiag profile`` to the app (``profile RECIPE`` is its hidden ``run``)."""
    profile_app.command(
        "run", hidden=True, cls=ResumeDirForm, context_settings={"allow_extra_args": False}
    )(run_cmd)
    app.add_typer(profile_app, name="profile")
