"""``vllmdiag doctor LEG`` / ``vllmdiag doctor RECIPE [LEG]``: leg hygiene."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from vllmdiag import codec
from vllmdiag.cli.output import JsonOption, emit_json, human, plain, user_errors
from vllmdiag.errors import EnvError, VllmdiagError
from vllmdiag.readers.hygiene import DoctorReport, doctor, failed_leg
from vllmdiag.services.envs import EnvCache, EnvEvent, LegSpec

_STYLE = {"contaminated": "bold red", "warning": "yellow", "ok": "green", "skipped": "dim"}


def _specs(target: str, leg: str | None) -> list[LegSpec]:
    if target.endswith((".yaml", ".yml")):
        from vllmdiag.plan import recipe_legs
        from vllmdiag.services.config import load_recipe

        return recipe_legs(load_recipe(Path(target)), leg)
    if leg is not None:
        raise VllmdiagError(
            "a second argument only goes with a recipe",
            hint="vllmdiag doctor PATH_TO_VENV, or vllmdiag doctor RECIPE.yaml [LEG]",
        )
    path = Path(target)
    if not path.exists():
        raise VllmdiagError(
            "no such environment",
            where=target,
            hint="give a virtual environment (or its bin/python), or a recipe .yaml",
        )
    return [LegSpec(name=path.name or str(path), existing=path)]


def _env_pairs(pairs: list[str]) -> dict[str, str]:
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise VllmdiagError(
                f"--env takes KEY=VALUE, not {p!r}", hint="e.g. --env VLLM_LOGGING_LEVEL=DEBUG"
            )
        out[key] = value
    return out


def doctor_cmd(
    target: Annotated[
        str, typer.Argument(metavar="LEG | RECIPE", help="A venv (or its python), or a recipe.")
    ],
    leg: Annotated[
        str | None, typer.Argument(help="With a recipe: one leg (or arm) name; default all.")
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            metavar="KEY=VALUE",
            help="A variable the run would get (checks the DEBUG hazard); repeatable.",
        ),
    ] = None,
    no_gpu: Annotated[
        bool, typer.Option("--no-gpu", help="Do not look for other GPU processes.")
    ] = False,
    as_json: bool = JsonOption,
) -> None:
    """Check a leg for what changes vLLM behind a recipe's back.

    Checks: plugins in the vllm.* entry-point groups (vllm-omni), a `vllm` script owned
    by another distribution, flashinfer-jit-cache / -cubin not matching
    flashinfer-python, other processes on the GPUs, DEBUG logging with usage stats on,
    installed versions that break what vllm, torch or flashinfer-python declare they
    require (VLLMDIAG_DECLARED=a,b,... names others), a path: leg that cannot be used,
    cell processes an earlier, killed vllmdiag run left running on this node.

    Exit status: 0 clean, 2 contaminated (a matrix refuses such a leg unless
    overridden), 1 on a usage error or a path: leg that cannot be used.
    """
    with user_errors():
        run_env = _env_pairs(env or [])
        out = human(as_json)
        cache = EnvCache()
        reports: list[DoctorReport] = []
        for spec in _specs(target, leg):

            def note(ev: EnvEvent) -> None:
                out.print(
                    plain(f"leg {ev.leg}: {ev.kind.value} {ev.detail}", "dim"), highlight=False
                )

            try:
                built = cache.ensure(spec, observer=note)
            except EnvError as exc:
                if spec.existing is None:
                    raise
                reports.append(failed_leg(spec.name, str(spec.existing), exc))
                continue
            reports.append(doctor(built, run_env, check_gpu=not no_gpu))
        if as_json:
            emit_json(
                codec.dump(reports[0])
                if len(reports) == 1
                else {"legs": codec.dump(tuple(reports))}
            )
        else:
            for r in reports:
                _show(r, out)
        if any(r.contaminated for r in reports):
            raise typer.Exit(2)
        if any(f.code == "leg-failed" for r in reports for f in r.findings):
            raise typer.Exit(1)


def _show(r: DoctorReport, out: Console) -> None:
    title = plain(f"leg {r.leg} ({r.path}), vllm {r.vllm or '-'}: ")
    if any(f.code == "leg-failed" for f in r.findings):
        title.append("NOT CHECKED", "bold red")  # nothing ran: never "clean"
    else:
        title.append(*(("CONTAMINATED", "bold red") if r.contaminated else ("clean", "green")))
    table = Table(title=title, title_justify="left")
    table.add_column("", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("finding", overflow="fold")
    for f in r.findings:
        text = plain(f.message)
        if f.hint and f.severity not in ("ok", "skipped"):
            text.append(f"\n→ {f.hint}", style="dim")
        table.add_row(plain(f.severity.value, _STYLE.get(f.severity, "")), plain(f.code), text)
    out.print(table)


def register(app: typer.Typer) -> None:
    """Add this family's commands to the app."""
    app.command("doctor")(doctor_cmd)
