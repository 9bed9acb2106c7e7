"""CLI: ``vllmdiag window PKG --symbol MODULE.ATTR``."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors
from vllmdiag.window.job import WindowEvent, WindowReport, WindowRequest, run_window
from vllmdiag.window.model import Status

_STYLE = {
    Status.PRESENT: "green",
    Status.ABSENT: "red",
    Status.MODULE_MISSING: "red",
    Status.IMPORT_ERROR: "yellow",
    Status.INSTALL_FAILED: "yellow",
    Status.NOT_PROBED: "dim",
}


def register(app: typer.Typer) -> None:
    app.command("window")(window)


def window(
    pkg: str = typer.Argument(..., help="The package, extras allowed: PKG or PKG\\[extra]."),
    symbol: str = typer.Option(..., "--symbol", help="MODULE.ATTR to look for."),
    versions: str | None = typer.Option(
        None, "--versions", help="Limit the range, e.g. '>=4.0,<5'."
    ),
    pre: bool = typer.Option(False, "--pre", help="Include pre-releases."),
    python: str | None = typer.Option(
        None, "--python", help="X.Y of the probes' Python (default: this one)."
    ),
    exclude_newer: str | None = typer.Option(
        None, "--exclude-newer", help="Ignore files uploaded after this date."
    ),
    consumer: list[str] = typer.Option(
        [], "--consumer", help="A requirement that consumes PKG (repeatable)."
    ),
    scan: bool = typer.Option(False, "--scan", help="Probe every version, not a search."),
    hint: bool = typer.Option(
        False, "--hint", help="Read each wheel's source first (no install) to choose probes."
    ),
    jobs: int = typer.Option(4, "--jobs", min=1, help="Probes at a time."),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Ignore stored probe results (uv's cache is still used)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Which versions of PKG have MODULE.ATTR, and what that means for its consumers."""
    console = human(as_json)
    request = WindowRequest(
        package=pkg,
        symbol=symbol,
        versions=versions,
        pre=pre,
        python=python,
        exclude_newer=exclude_newer,
        consumers=tuple(consumer),
        scan=scan,
        jobs=jobs,
        no_cache=no_cache,
        hint=hint,
    )
    with user_errors(), console.status("listing versions") as status:

        def observe(event: WindowEvent) -> None:
            if event.kind == "probe-start":
                status.update(f"probing {pkg}=={event.version}")
            elif event.kind == "probe-done" and event.result and not event.result.stored:
                r = event.result
                how = "stored" if r.stored else f"{r.elapsed_s:.1f}s"
                console.print(f"  [dim]{event.version}: {r.status.value} ({how})[/]")
            elif event.kind in ("resolve", "hint"):
                status.update(event.detail)

        report = run_window(request, observe)
    if as_json:
        emit_json(report.to_json())
        return
    render(console, report)


def render(console: Console, report: WindowReport) -> None:
    table = Table(title=f"{report.package}: {report.symbol} (Python {report.python})")
    for col in ("version", "status", "how", "time", "detail"):
        table.add_column(col, no_wrap=col != "detail")
    for row in report.rows:
        how = ("stored" if row.stored else "probed") if row.probed else "inferred"
        table.add_row(
            row.version,
            f"[{_STYLE[row.status]}]{row.status.value}[/]",
            how,
            f"{row.elapsed_s:.1f}s" if row.probed and not row.stored else "",
            _first_line(row.detail),
        )
    if not report.rows:
        console.print("[yellow]no candidate versions[/] (check --versions, --pre, --python)")
    elif report.window:
        console.print(table)
        more = f" (all windows: {' | '.join(report.windows)})" if len(report.windows) > 1 else ""
        console.print(f"window: [bold]{report.window}[/]{more}")
    else:
        console.print(table)
        console.print(f"window: [bold red]none[/]: no version examined has {report.symbol}")
    for note in report.notes:
        console.print(f"[yellow]note:[/] {note}")
    console.print(
        f"[dim]{report.probes_run} probed now, {report.probes_stored} from stored results, "
        f"{report.elapsed_s:.1f}s[/]"
    )
    for c in report.consumers:
        data = c.to_json()
        console.print(f"\n[bold]{c.requirement}[/] (release {c.release})")
        console.print(f"  declares: {report.package}{c.declared or ' (nothing)'}")
        without = c.assessment.admitted_without if c.assessment else ()
        console.print(f"  admitted without the symbol: {', '.join(without) or 'none'}")
        pick = c.resolves_to or "-"
        as_of = f" (as of --exclude-newer: {c.resolves_to_as_of})" if c.resolves_to_as_of else ""
        console.print(f"  a fresh resolve picks: {pick}{as_of}")
        for k in c.constrained_by:
            console.print(f"  constrained by: {k}")
        if c.resolve_error:
            console.print(f"  [yellow]resolve failed:[/] {_first_line(c.resolve_error)}")
        console.print(f"  verdict: {data['verdict']}")


def _first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[-1] if len(lines) > 1 else lines[0]
    return line if len(line) <= 100 else line[:97] + "..."
