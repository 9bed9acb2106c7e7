"""``vllmdiag compare A B``: what transfers between two machines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmdiag import codec
from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.compare import Comparison, compare, load_table, parse_pair, report, to_markdown
from vllmdiag.jobs.compare.report import agreement_text, ratio_text
from vllmdiag.jobs.compare.tables import Direction, label
from vllmdiag.jobs.compare.transfer import Compared, Settings
from vllmdiag.printable import printable
from vllmdiag.services import atomic

_TRANSFERS = {True: "[green]yes[/]", False: "[bold red]no[/]", None: "[yellow]—[/]"}


def compare_cmd(
    a: Annotated[Path, typer.Argument(metavar="A", help="Side A: a .md, .tsv or .csv table.")],
    b: Annotated[Path, typer.Argument(metavar="B", help="Side B, the same metric.")],
    table: Annotated[
        str | None,
        typer.Option(
            "--table",
            metavar="TEXT",
            help="Use the table whose heading contains TEXT (both sides; default: the "
            "first table with leg columns).",
        ),
    ] = None,
    pair: Annotated[
        list[str] | None,
        typer.Option(
            "--pair",
            metavar="NEW/OLD",
            help="A leg pair to compare, e.g. 0.29/0.18 (repeatable; default: consecutive "
            "legs, 0.26/0.18 and 0.29/0.26).",
        ),
    ] = None,
    factor: Annotated[
        float,
        typer.Option(help="A row does not transfer when its two speedups differ by more."),
    ] = 1.25,
    noise: Annotated[
        float,
        typer.Option(
            help="Noise band: an agreement moved at least this much (0.05 = 5 %) on both sides."
        ),
    ] = 0.05,
    agree: Annotated[
        float,
        typer.Option(
            help="An agreement's two speedups lie within this of each other (0.05 = 5 %)."
        ),
    ] = 0.05,
    lower_is_better: Annotated[
        bool | None,
        typer.Option(
            "--lower-is-better/--higher-is-better",
            help="Override what the heading or units say (latency, ms/tok: lower).",
            show_default=False,
        ),
    ] = None,
    name_a: Annotated[str, typer.Option("--name-a", help="What to call side A.")] = "A",
    name_b: Annotated[str, typer.Option("--name-b", help="What to call side B.")] = "B",
    md: Annotated[
        Path | None, typer.Option("--md", metavar="PATH", help="Also write a Markdown summary.")
    ] = None,
    as_json: bool = JsonOption,
) -> None:
    """What transfers between two machines: the same results table from each, compared
    per (model, workload, leg pair).

    Leg columns are headed by versions (0.18, 0.26, ...); ratios are recomputed from
    them, never taken from the printed ratio columns (those are cross-checked, allowing
    for the printed rounding, and any disagreement is reported). A speedup NEW/OLD is
    value(NEW)/value(OLD) when higher is better (throughput, tok/s) and
    value(OLD)/value(NEW) when lower is better (latency, ms/tok; a printed 18→26
    column is such a speedup), so above 1 always means NEW is better. The direction is
    read from the heading or units ('lower is better', ms, latency, tok/s).

    A row does not transfer when factor = max(a, b) / min(a, b) > --factor. An
    agreement moved beyond --noise on both sides and lands within --agree: a version
    effect, not a hardware artefact. Rows are matched by (model, workload) after markup
    is stripped; rows on one side only are listed, never guessed at; — is a run that
    did not happen or failed on that side.
    """
    with user_errors():
        direction: Direction | None = (
            None if lower_is_better is None else ("lower" if lower_is_better else "higher")
        )
        settings = Settings(factor=factor, noise=noise, agree=agree)
        settings.check()
        ta, tb = load_table(a, table), load_table(b, table)
        pairs = [parse_pair(p, ta, tb) for p in pair or []]
        result = compare(
            ta,
            tb,
            pairs=pairs or None,
            settings=settings,
            direction=direction,
            names=(name_a, name_b),
        )
        if md is not None:
            _write(md, to_markdown(result))
        if as_json:
            emit_json(codec.dump(report(result)))
        else:
            _render(human(as_json), result)
        if md is not None:
            human(as_json).print(f"wrote {escape(str(md))}", highlight=False)


def _write(path: Path, text: str) -> None:
    try:
        atomic.write_text(path, printable(text))
    except OSError as exc:
        raise VllmdiagError(
            f"cannot write the summary: {exc.strerror or exc}",
            where=str(path),
            hint="give --md a file path in a writable directory",
        ) from None


def _ratio(r: Compared, side: str) -> str:
    ratio = r.a if side == "a" else r.b
    if ratio.value is None:
        return f"[yellow]—[/] [dim]({escape(ratio.missing_leg or '')})[/]"
    return ratio_text(ratio)


def _render(out: Console, c: Comparison) -> None:
    names = c.names
    a, b = (escape(n) for n in names)
    for name, t in ((a, c.a), (b, c.b)):
        out.print(
            f"[bold]{name}[/] = {escape(t.source)}: {escape(t.title or '(untitled)')} "
            f"({len(t.rows)} rows, legs {escape(', '.join(t.legs))})",
            highlight=False,
        )
    out.print(f"{c.direction} is better: {escape(c.direction_text())}", highlight=False)
    for pair in c.pairs:
        table = Table(title=f"speedup {escape(pair.label)}", title_justify="left")
        table.add_column("model", overflow="fold")
        table.add_column("workload", overflow="fold")
        for col in (names[0], names[1], "factor"):
            table.add_column(escape(col), justify="right", no_wrap=True)
        table.add_column("transfers", no_wrap=True)
        table.add_column("", no_wrap=True)
        rows = [r for r in c.rows if r.pair == pair]
        for r in rows:
            marks = ["[cyan]agreement[/]"] if r.agreement else []
            marks += ["[dim]borderline[/]"] if r.borderline else []
            table.add_row(
                escape(r.model),
                escape(r.workload),
                _ratio(r, "a"),
                _ratio(r, "b"),
                "—" if r.factor is None else f"{r.factor:.2f}x",
                _TRANSFERS[r.transfers],
                ", ".join(marks),
            )
        out.print(table)
        _legend(out, rows, names)
    _summary(out, c)


def _legend(out: Console, rows: list[Compared], names: tuple[str, str]) -> None:
    """What each — means: which leg has no value on which side, and why."""
    why: dict[str, list[str]] = {}
    for r in rows:
        for name, ratio in ((names[0], r.a), (names[1], r.b)):
            if ratio.missing:
                why.setdefault(f"{name}, {ratio.missing}", []).append(label(r.model, r.workload))
    for reason, where in why.items():
        out.print(f"  [yellow]—[/] {escape(reason)}: {escape('; '.join(where))}", highlight=False)
    if any(r.borderline for r in rows):
        out.print(
            "  [dim]borderline[/]: the values' printed rounding allows a factor on either "
            "side of the threshold",
            highlight=False,
        )


def _summary(out: Console, c: Comparison) -> None:
    names = c.names
    differs = c.differs()
    title = f"speedups that differ by more than {c.settings.factor:g}x ({len(differs)})"
    table = Table(title=escape(title), title_justify="left")
    table.add_column("model / workload", overflow="fold")
    for col in ("comparison", names[0], names[1], "factor"):
        table.add_column(escape(col), no_wrap=True)
    for r in differs:
        table.add_row(
            escape(f"{r.model} {r.workload}".strip()),
            escape(r.pair.label),
            ratio_text(r.a),
            ratio_text(r.b),
            f"{r.factor or 0:.2f}x",
        )
    out.print(table if differs else "[green]every row both sides measured transfers[/]")
    agreements = c.agreements()
    if agreements:
        out.print("[bold cyan]agreements[/]")
    for r in agreements:
        out.print(f"  {escape(agreement_text(r, names))}", highlight=False)
    for o in c.only_in:
        side = c.name(o.side)
        out.print(
            f"[yellow]only in {escape(side)}[/]: {escape(label(o.model, o.workload))} "
            f"({escape(o.where)})",
            highlight=False,
        )
    for n in c.notes:
        out.print(
            f"[yellow]{escape(n.kind)}[/]: {escape(n.message)} ({escape(n.where)})", highlight=False
        )


def register(app: typer.Typer) -> None:
    """Add this family's commands to the app."""
    app.command("compare")(compare_cmd)
