"""CLI: ``vllmdiag bisect PKG --good V --bad V -- CMD...``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors
from vllmdiag.window.bisect import Verdict
from vllmdiag.window.bisect_journal import Step
from vllmdiag.window.bisect_run import BisectReport, BisectRequest, run_bisect

_STYLE = {Verdict.GOOD: "green", Verdict.BAD: "red", Verdict.SKIP: "yellow"}


def register(app: typer.Typer) -> None:
    app.command("bisect")(bisect)


def bisect(
    pkg: str = typer.Argument(..., help="The package, extras allowed: PKG or PKG\\[extra]."),
    command: list[str] = typer.Argument(
        None, help="The check, after --: exit 0 good, 125 skip, anything else bad."
    ),
    good: str = typer.Option(..., "--good", help="A version known good."),
    bad: str = typer.Option(..., "--bad", help="A version known bad."),
    python: str | None = typer.Option(None, "--python", help="X.Y of the env's Python."),
    exclude_newer: str | None = typer.Option(
        None, "--exclude-newer", help="Resolve as of this date."
    ),
    with_: list[str] = typer.Option(
        [], "--with", help="Another requirement for each step's env (repeatable)."
    ),
    repeat: int = typer.Option(1, "--repeat", min=1, help="Runs per version; majority wins."),
    metric: str | None = typer.Option(
        None, "--metric", help="Bisect a performance regression on this metric."
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        help="Ratio to the good version's metric: below 1, bad when the ratio falls under "
        "it (higher is better); above 1, bad when it rises over it (lower is better).",
    ),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds per check run."),
    pre: bool = typer.Option(False, "--pre", help="Include pre-releases between the ends."),
    fresh: bool = typer.Option(False, "--fresh", help="Discard the journal of this question."),
    recipe: str | None = typer.Option(None, "--recipe", help="A recipe whose cell is the check."),
    cell: str | None = typer.Option(None, "--cell", help="The recipe cell to run as the check."),
    as_json: bool = JsonOption,
) -> None:
    """Find the first release of PKG that breaks a check (git-bisect-run rules)."""
    console = human(as_json)
    with user_errors():
        request = BisectRequest(
            package=pkg,
            good=good,
            bad=bad,
            command=tuple(command or ()),
            python=python,
            exclude_newer=exclude_newer,
            with_requirements=tuple(with_),
            repeat=repeat,
            metric=metric,
            threshold=threshold,
            timeout_s=timeout,
            pre=pre,
            fresh=fresh,
            recipe=Path(recipe) if recipe else None,
            cell=cell,
        )

        def observe(version: str, step: Step | None) -> None:
            if step is None:
                console.print(f"  [dim]{pkg}=={version}: installing and checking[/]")
            else:
                how = "journal" if step.resumed else f"{step.elapsed_s:.1f}s"
                console.print(
                    f"  {version}: [{_STYLE[step.verdict]}]{step.verdict.value}[/] "
                    f"(rc {step.rc}, {how})"
                )

        report = run_bisect(request, observe)
    if as_json:
        emit_json(report.to_json())
        return
    render(console, report)


def render(console: Console, report: BisectReport) -> None:
    table = Table(title=f"bisect {report.package}")
    for col in ("version", "verdict", "rc", "time", "detail"):
        table.add_column(col)
    for s in report.steps:
        table.add_row(
            s.version,
            f"[{_STYLE[s.verdict]}]{s.verdict.value}[/]",
            " ".join(str(r) for r in s.rcs) or str(s.rc),
            "journal" if s.resumed else f"{s.elapsed_s:.1f}s",
            s.detail.splitlines()[-1][:100] if s.detail else "",
        )
    console.print(table)
    console.print(
        f"last good: [green]{report.last_good}[/]   first bad: [red]{report.first_bad}[/]"
    )
    if not report.exact:
        console.print(
            f"[yellow]not exact:[/] {', '.join(report.skipped) or 'versions'} between them "
            "could not be checked (skipped)"
        )
    console.print(
        f"[dim]{len(report.steps)} steps, {report.elapsed_s:.1f}s, journal {report.journal}[/]"
    )
