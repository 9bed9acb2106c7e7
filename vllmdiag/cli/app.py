"""The ``vllmdiag`` console script: one Typer app, a module per command family."""

from __future__ import annotations

import sys

import typer

from vllmdiag import __version__
from vllmdiag.cli import (
    arms_cmd,
    bisect_cmd,
    compare_cmd,
    doctor_cmd,
    fingerprint_cmd,
    leg_cmd,
    matrix_cmd,
    profile_cmd,
    triage_cmd,
    window_cmd,
)

app = typer.Typer(
    name="vllmdiag",
    help="Diagnose vLLM regressions: arms, falsification matrices, dependency windows, "
    "run triage and profile diffs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """vllmdiag: turn a week of hand-run scripts into a few commands."""


# Each command family registers itself; keep one line per module.
matrix_cmd.register(app)
arms_cmd.register(app)
leg_cmd.register(app)
window_cmd.register(app)
bisect_cmd.register(app)
profile_cmd.register(app)
triage_cmd.register(app)
fingerprint_cmd.register(app)
doctor_cmd.register(app)
compare_cmd.register(app)


def main() -> None:
    try:
        app()
    except Exception:  # a bug in vllmdiag, not a user mistake: exit 3 with the traceback
        import traceback

        traceback.print_exc()
        sys.exit(3)
