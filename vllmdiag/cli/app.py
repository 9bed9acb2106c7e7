"""The ``vllmdiag`` console script: one Typer app, a module per command family."""

from __future__ import annotations

import sys

import typer

from vllmdiag.cli import (
    arms_cmd,
    bisect_cmd,
    compare_cmd,
    doctor_cmd,
    fingerprint_cmd,
    leg_cmd,
    matrix_cmd,
    profile_run_cmd,
    report_cmd,
    study_cmd,
    triage_cmd,
    window_cmd,
)
from vllmdiag.cli.helpfmt import TidyGroup
from vllmdiag.cli.output import emit_json, report_error, set_json_mode, stderr
from vllmdiag.version import __version__

app = typer.Typer(
    name="vllmdiag",
    cls=TidyGroup,
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
    set_json_mode(False)  # until the command's own --json says otherwise


# Each command family registers itself; keep one line per module.
matrix_cmd.register(app)
arms_cmd.register(app)
leg_cmd.register(app)
window_cmd.register(app)
bisect_cmd.register(app)
profile_run_cmd.register(app)
triage_cmd.register(app)
fingerprint_cmd.register(app)
doctor_cmd.register(app)
compare_cmd.register(app)
report_cmd.register(app)
study_cmd.register(app)


#: The click exception class typer raises for usage errors (typer may carry its own copy
#: of click, so it is found from typer's public ``BadParameter``).
_USAGE_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


def main() -> None:
    as_json = "--json" in sys.argv[1:]
    try:
        rc = app(standalone_mode=False)
    except _USAGE_ERROR as exc:  # a bad option, a missing argument, a bad value
        exc.show()  # type: ignore[attr-defined]
        if as_json:
            report_error(
                exc.format_message(),  # type: ignore[attr-defined]
                where=None,
                hint="see --help for the command's arguments",
                as_json=True,
                show=False,
            )
        sys.exit(exc.exit_code)  # type: ignore[attr-defined]
    except typer.Abort:
        stderr.print("[yellow]interrupted[/]")
        sys.exit(130)
    except Exception as exc:  # a bug in vllmdiag, not a user mistake: exit 3 with the traceback
        import traceback

        traceback.print_exc()
        if as_json:
            emit_json(
                {
                    "error": f"internal error: {type(exc).__name__}: {exc}",
                    "where": None,
                    "hint": "this is a bug in vllmdiag; the traceback is on stderr",
                }
            )
        sys.exit(3)
    sys.exit(rc if isinstance(rc, int) else 0)
