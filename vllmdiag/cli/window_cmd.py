"""CLI: ``vllmdiag window PKG --symbol MODULE.ATTR``."""

from __future__ import annotations

from typing import ClassVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from typer.core import TyperArgument, TyperCommand, TyperOption

from vllmdiag import codec
from vllmdiag.cli.clickcompat import Context, NoSuchOption, Parameter, UsageError
from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors
from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note
from vllmdiag.jobs.window import (
    ConsumerReport,
    ProbeFinished,
    ProbeStarted,
    ProbeStatus,
    ResolveStarted,
    StaticReadStarted,
    VersionsListed,
    WindowEvent,
    WindowRequest,
    WindowResult,
    find_window,
)

__all__ = ["Command", "Context", "NoSuchOption", "UsageError", "register", "render", "window"]

_STYLE = {
    ProbeStatus.PRESENT: "green",
    ProbeStatus.ABSENT: "red",
    ProbeStatus.MODULE_MISSING: "red",
    ProbeStatus.IMPORT_ERROR: "yellow",
    ProbeStatus.INSTALL_FAILED: "yellow",
    ProbeStatus.NOT_PROBED: "dim",
}


class Command(TyperCommand):
    """A command whose usage errors read like its other errors (one line: what, where,
    what to write; exit 1) and whose help shows words, not Python types."""

    hints: ClassVar[dict[str, str]] = {}

    def get_params(self, ctx: Context) -> list[Parameter]:
        params = super().get_params(ctx)
        for p in params:
            if isinstance(p, TyperOption) and p.is_flag and p.metavar is None:
                p.metavar = ""  # a flag takes no value: no "<bool>"
            if isinstance(p, TyperArgument):
                p.display_type_rich = _no_type  # type: ignore[method-assign]  # metavar says it
        return params

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            with user_errors():
                raise self.usage_error(exc) from None

    def usage_error(self, exc: UsageError) -> VllmdiagError:
        param = getattr(exc, "param", None)
        where = None
        if param is not None:
            if isinstance(param, TyperArgument):
                where = param.metavar or param.name
            else:
                where = param.opts[0] if param.opts else param.human_readable_name
        message = exc.format_message().rstrip(".")
        hint = self.hints.get(where or "", f"see: vllmdiag {self.name} --help")
        return VllmdiagError(message[:1].lower() + message[1:], where=where, hint=hint)


def _no_type(ctx: Context) -> str:
    return ""


class WindowCommand(Command):
    hints: ClassVar[dict[str, str]] = {
        "--symbol": "e.g. --symbol cutlass.cute.core.ThrMma",
        "PKG": "e.g. vllmdiag window nvidia-cutlass-dsl --symbol cutlass.cute.core.ThrMma",
        "--jobs": "give a whole number of at least 1, e.g. --jobs 4",
    }


def register(app: typer.Typer) -> None:
    app.command("window", cls=WindowCommand)(window)


def window(
    pkg: str = typer.Argument(
        ..., metavar="PKG", help="The package, extras allowed: PKG or PKG\\[extra]."
    ),
    symbol: str = typer.Option(
        ..., "--symbol", metavar="MODULE.ATTR", help="The name to look for, e.g. a.b.Class."
    ),
    versions: str | None = typer.Option(
        None, "--versions", metavar="SPEC", help="Limit the range, e.g. '>=4.0,<5'."
    ),
    pre: bool = typer.Option(False, "--pre", help="Include pre-releases."),
    python: str | None = typer.Option(
        None, "--python", metavar="X.Y", help="The probes' Python, or its path (default: this)."
    ),
    exclude_newer: str | None = typer.Option(
        None, "--exclude-newer", metavar="DATE", help="Ignore files uploaded after this date."
    ),
    consumer: list[str] = typer.Option(
        [],
        "--consumer",
        metavar="REQUIREMENT",
        help="A requirement that consumes PKG, e.g. vllm==0.18.0 (repeatable).",
    ),
    scan: bool = typer.Option(False, "--scan", help="Import-check every version, no search."),
    no_static: bool = typer.Option(
        False,
        "--no-static",
        help="Read no wheel source: decide every version the search needs by import.",
    ),
    jobs: int = typer.Option(4, "--jobs", min=1, metavar="N", help="Import checks at a time."),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Ignore stored results (uv's cache is still used)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Which versions of PKG have MODULE.ATTR, and what that means for its consumers.

    Wheel sources are read first; every change is confirmed by a real install and import."""
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
        static=not no_static,
    )
    with user_errors(), console.status("listing versions") as status:

        def observe(event: WindowEvent) -> None:
            if isinstance(event, VersionsListed):
                status.update(f"{len(event.versions)} candidate versions")
            elif isinstance(event, StaticReadStarted):
                status.update(f"reading the sources of {event.wheels} wheels")
            elif isinstance(event, ProbeStarted):
                status.update(f"installing and importing {escape(pkg)}=={escape(event.version)}")
            elif isinstance(event, ProbeFinished) and not event.result.stored:
                r = event.result
                console.print(
                    f"  [dim]{escape(r.version)}: {r.status.value} ({r.elapsed_s:.1f}s)[/]"
                )
            elif isinstance(event, ResolveStarted):
                status.update(f"uv pip compile {escape(event.requirement)}")
            elif isinstance(event, Note):
                console.print(Text(event.text, "yellow" if event.level == "warning" else "dim"))

        result = find_window(request, observe)
    if as_json:
        emit_json(codec.dump(result))
        return
    render(console, result)


def render(console: Console, result: WindowResult) -> None:
    title = f"{result.package}: {result.symbol} (Python {result.python})"
    table = Table(title=Text(title))
    for col in ("version", "status", "decided by", "time", "detail"):
        table.add_column(col, no_wrap=col != "detail")
    for row in result.versions:
        how = row.decided_by.value if row.decided_by else "-"
        if row.stored:
            how += " (stored)"
        table.add_row(
            Text(row.version),
            Text(row.status.value, style=_STYLE[row.status]),
            how,
            f"{row.elapsed_s:.1f}s" if row.probed and not row.stored else "",
            Text(_first_line(row.detail)),
        )
    console.print(table)
    if result.window:
        more = f" (all windows: {' | '.join(result.windows)})" if len(result.windows) > 1 else ""
        console.print(f"window: [bold]{escape(result.window)}[/]{escape(more)}")
    else:
        console.print(f"window: [bold red]none[/]: no version examined has {escape(result.symbol)}")
    for note in result.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    read = result.static_read
    static = (
        f", {len(result.decided_statically)} by the wheels' source ({read.elapsed_s:.1f}s)"
        if read.used
        else ""
    )
    console.print(
        f"[dim]{result.probes_run} imported now, {result.probes_stored} from stored results"
        f"{static}, {result.elapsed_s:.1f}s[/]"
    )
    for c in result.consumers:
        _consumer(console, result.package, c)


def _consumer(console: Console, package: str, c: ConsumerReport) -> None:
    def line(label: str, value: object) -> None:
        console.print(Text.assemble(f"  {label}: ", str(value)))

    console.print()
    console.print(Text.assemble((c.requirement, "bold"), f" (release {c.release})"))
    line("declares", f"{package}{c.declared or ' (nothing)'}")
    line("admitted without the symbol", ", ".join(c.admitted_without_symbol) or "none")
    as_of = f" (as of --exclude-newer: {c.resolves_to_as_of})" if c.resolves_to_as_of else ""
    line("a fresh resolve picks", f"{c.resolves_to or '-'}{as_of}")
    for k in c.constrained_by:
        line("constrained by", str(k))
    if c.resolve_error:
        line("resolve failed", _first_line(c.resolve_error))
    line("verdict", c.verdict)


def _first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[-1] if len(lines) > 1 else lines[0]
    return line if len(line) <= 100 else line[:97] + "..."
