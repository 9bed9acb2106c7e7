"""``vllmdiag report RUN_DIR...``: draft an upstream issue from what vllmdiag measured.

The body is Markdown for the issue tracker: printed as plain text (never parsed as
Rich markup: a title starts ``[Bug]:``), or written with ``--out``. Everything in it is
already redacted."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from vllmdiag import codec
from vllmdiag.cli.output import JsonOption, emit_json, human, stderr, stdout, user_errors
from vllmdiag.cli.values import path_value
from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note
from vllmdiag.jobs.report import Report, ReportRequest, draft_report
from vllmdiag.printable import printable
from vllmdiag.services import atomic


def report(
    runs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_DIR",
            help="Run directories 'vllmdiag matrix' wrote: the failing one first; more of "
            "the same recipe on other machines give the blast radius.",
            show_default=False,
        ),
    ],
    window: Annotated[
        Path | None,
        typer.Option(
            "--window",
            metavar="WINDOW.json",
            help="The result 'vllmdiag window ... --json' printed (a dependency window).",
        ),
    ] = None,
    profile: Annotated[
        Path | None,
        typer.Option(
            "--profile", metavar="PROFILE_RUN", help="A run directory 'vllmdiag profile' wrote."
        ),
    ] = None,
    bisect: Annotated[
        Path | None,
        typer.Option(
            "--bisect",
            metavar="BISECT.json",
            help="A bisect result: what 'vllmdiag bisect ... --json' printed, or the journal "
            "of a finished bisection.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            parser=path_value,
            metavar="FILE",
            help="Write the issue body (Markdown) to FILE.",
        ),
    ] = None,
    as_json: bool = JsonOption,
) -> None:
    """Draft an upstream issue from what the runs measured.

    Where it goes and why, a title, and a body in the target's template
    (vLLM's bug form for vLLM). Sections appear where there is evidence:
    the environment, a reproduction that pastes and runs, the root cause,
    the single-variable evidence, a bisection, the dependency window, the blast radius,
    a profile, search terms. Secrets, credentials in URLs, home paths, user
    and host names are redacted, and the body ends with what was.
    """
    with user_errors():
        console = human(as_json)

        def note(event: Note) -> None:
            stderr.print(Text(f"{event.level}: {event.text}", style="yellow"), highlight=False)

        drafted = draft_report(ReportRequest(tuple(runs), window, profile, bisect), note)
        if out is not None:
            _write(out, drafted.body)
        if as_json:
            emit_json(codec.dump(drafted))
            return
        if out is None:
            stdout.print(Text(drafted.body), highlight=False, markup=False, end="")
        _summary(console if out is not None else stderr, drafted, out)


def _summary(console: Console, drafted: Report, out: Path | None) -> None:
    t = drafted.target
    text = Text()
    if out is not None:
        text.append(f"wrote {out}\n")
    text.append("target: ", style="bold")
    text.append(f"{t.project or '(undetermined)'} ({t.kind.value}, template {t.template.value})")
    text.append(f"\n  {t.reason}\ntitle: ")
    text.append(drafted.title)
    text.append("\nsections: " + ", ".join(s.id.value for s in drafted.sections))
    counts = ", ".join(f"{k} {n}" for k, n in drafted.redactions.items())
    text.append(f"\nredacted: {counts}")
    console.print(text, highlight=False)


def _write(path: Path, text: str) -> None:
    try:
        atomic.write_text(path, printable(text))
    except OSError as exc:
        raise VllmdiagError(
            f"cannot write the report: {exc.strerror or exc}",
            where=str(path),
            hint="give --out a file path in a writable directory",
        ) from None


def register(app: typer.Typer) -> None:
    """Add this family's commands to the app."""
    app.command("report")(report)
