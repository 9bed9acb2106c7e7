"""CLI: ``vllmdiag study`` — the version ablation as one command.

vllmdiag study RECIPE [--out DIR] [--batch NAME] [--model M] [--leg L] [--workload W]
vllmdiag study RECIPE --out DIR --resume [--batch NAME]
vllmdiag study tables DIR
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from vllmdiag import codec
from vllmdiag.cli.executor_opts import (
    AddressOption,
    ExecutorKind,
    ExecutorOption,
    GpusOption,
    RepeatsOption,
    connected,
    with_repeats,
)
from vllmdiag.cli.forms import FormGroup, ResumeFlagForm
from vllmdiag.cli.live import LiveView
from vllmdiag.cli.output import JsonOption, emit_json, human, plain, user_errors, warn_lines
from vllmdiag.cli.tables import print_cells
from vllmdiag.cli.values import path_value
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.study import (
    BatchOpened,
    Filters,
    StudyEvent,
    StudyOptions,
    StudyPlan,
    StudyReport,
    StudyTables,
    TablesWritten,
    load_study,
    regenerate,
    resume_command,
    run_study,
    study_plan,
)
from vllmdiag.jobs.study.render import coverage_grid, metric_grid
from vllmdiag.jobs.study.study_plan import bench_warnings
from vllmdiag.services.config import numbers
from vllmdiag.services.proc import Interrupted


class _StudyGroup(FormGroup):
    """``study RECIPE ...`` runs the hidden ``run`` command; ``study tables DIR`` as
    usual; a word that is neither is a typo, said so."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        first = args[0] if args else ""
        if first and first not in self.commands and not first.startswith("-"):
            if first.endswith((".yaml", ".yml")) or "/" in first or Path(first).is_file():
                args = ["run", *args]
            else:
                close = difflib.get_close_matches(first, ["tables"], n=1)
                raise typer.BadParameter(
                    f"{first!r} is neither 'tables' nor a study recipe file"
                    + (f"; did you mean {close[0]!r}?" if close else ""),
                    ctx=ctx,
                    param_hint="RECIPE or tables",
                )
        return super().parse_args(ctx, args)


study_app = typer.Typer(
    cls=_StudyGroup,
    help="A version ablation as one command: legs × models × workloads × metrics.\n\n"
    "vllmdiag study RECIPE --out DIR adds a batch of cells to the study in DIR (all of "
    "it, or what --model/--leg/--workload name: a backfill), then regenerates its tables: "
    "REPORT.md (coverage, one table per metric with the ratio columns), CANONICAL.md "
    "(which run counts, and why the others do not), MANIFEST.md (stacks, pins, harness, "
    "hygiene, uncommitted changes) and tables/*.tsv. 'tables DIR' regenerates them from "
    "the results alone.",
    no_args_is_help=True,
)


@study_app.command("run", hidden=True, cls=ResumeFlagForm)
def run_cmd(
    recipe: Path = typer.Argument(..., help="The study recipe YAML."),
    out: Path | None = typer.Option(
        None,
        "--out",
        parser=path_value,
        metavar="DIR",
        help="The study directory (default RUNS_ROOT/<name>).",
    ),
    runs_root: Path = typer.Option(
        Path("runs"),
        "--runs-root",
        parser=path_value,
        metavar="DIR",
        help="Where DIR goes without --out.",
    ),
    batch: str | None = typer.Option(
        None,
        "--batch",
        metavar="NAME",
        help="Name the new batch (default batch-N), or "
        "the one --resume continues (default the latest).",
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Continue an interrupted batch: finished cells measured "
        "under the same settings are kept.",
    ),
    model: list[str] = typer.Option(
        [], "--model", metavar="NAME", help="Only this model (repeatable)."
    ),
    leg: list[str] = typer.Option([], "--leg", metavar="NAME", help="Only this leg (repeatable)."),
    workload: list[str] = typer.Option(
        [], "--workload", metavar="NAME", help="Only this workload (repeatable)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Show every cell, its leg and exact command; run nothing."
    ),
    grace: float = typer.Option(
        10.0, "--grace", metavar="SECONDS", help="Seconds between TERM and KILL of a cell."
    ),
    allow_contaminated: bool = typer.Option(
        False, "--allow-contaminated", help="Run even if a leg fails its hygiene check."
    ),
    wait: bool = typer.Option(False, "--wait", help="Queue behind a job holding the node lock."),
    repeats: int | None = RepeatsOption,
    executor: ExecutorKind = ExecutorOption,
    address: str | None = AddressOption,
    gpus: int | None = GpusOption,
    as_json: bool = JsonOption,
) -> None:
    """Run a batch of the study and regenerate its tables (each cell on a node of its
    own: a study measures)."""
    console = human(as_json)
    with user_errors():
        study = with_repeats(load_study(recipe), repeats)
        filters = Filters(tuple(model), tuple(leg), tuple(workload))
        if dry_run:
            filters.check(study)
            p = study_plan(study, filters)
            if as_json:
                emit_json(codec.dump(p))
                return
            _print_plan(console, p)
            return
        warn_lines(console, bench_warnings(study, filters))
        opts = StudyOptions(
            out=out,
            runs_root=runs_root,
            batch=batch,
            resume=resume,
            filters=filters,
            grace_s=numbers.seconds(grace, "--grace", zero_ok=True, maximum=numbers.MAX_GRACE_S),
            allow_contaminated=allow_contaminated,
            wait=wait,
        )
        with connected(console, executor, address, gpus) as ex, LiveView(console) as view:
            report = run_study(study, replace(opts, executor=ex), _observer(console, view))
        _print_tables(console, report.tables)
        console.print(plain(f"report: {report.study_dir / 'REPORT.md'}"))
        if as_json:
            emit_json(codec.dump(report))
        _finish(console, report)


def _observer(console: Console, view: LiveView) -> Callable[[StudyEvent], None]:
    def emit(event: StudyEvent) -> None:
        if isinstance(event, BatchOpened):
            verb = "resuming" if event.resumed else "new"
            line = Text(f"study {event.study}: {verb} batch ", style="bold")
            line.append(event.batch, style="bold cyan")
            line.append(f" ({event.cells} cells) in {event.study_dir}", style="")
            console.print(line, highlight=False, soft_wrap=True)
        elif isinstance(event, TablesWritten):
            console.print(plain(f"tables written: {', '.join(event.files)}"), highlight=False)
        else:
            view(event)

    return emit


def _finish(console: Console, report: StudyReport) -> None:
    if report.interrupted:
        again = resume_command_for(report)
        line = Text("interrupted", style="yellow")
        line.append(f": resume with {again}", style="")
        console.print(line, soft_wrap=True)
        raise typer.Exit(Interrupted(report.stopped_by or "SIGINT").exit_code)
    if report.cells_run == 0:
        console.print(
            Text("error: ", style="bold red").append(
                "no cell of this batch could run: every cell is an error (see "
                f"{report.batch_dir / 'envs'} and each cell's log)"
            ),
            highlight=False,
        )
        raise typer.Exit(1)


def resume_command_for(report: StudyReport) -> str:
    return resume_command(report.source or "RECIPE", report.study_dir, report.batch)


@study_app.command("tables")
def tables_cmd(
    study_dir: Path = typer.Argument(..., metavar="DIR", help="A study directory."),
    as_json: bool = JsonOption,
) -> None:
    """Regenerate REPORT.md, CANONICAL.md, MANIFEST.md, tables/*.tsv from the results."""
    console = human(as_json)
    with user_errors():
        if not study_dir.is_dir():
            raise VllmdiagError(
                "no such study directory",
                where=str(study_dir),
                hint="give the directory 'vllmdiag study RECIPE --out DIR' wrote",
            )
        done = regenerate(study_dir, lambda text: _warn(console, text))
        _print_tables(console, done.tables)
        console.print(plain(f"wrote {', '.join(done.files)} in {study_dir}"), highlight=False)
        if as_json:
            emit_json(codec.dump(done))


def _warn(console: Console, text: str) -> None:
    console.print(Text("warning: ", style="yellow").append(text), highlight=False)


def _print_tables(console: Console, tables: StudyTables) -> None:
    console.print(_table("coverage per leg", coverage_grid(tables.coverage)))
    for t in tables.tables:
        console.print(_table(t.title, metric_grid(t, notes_text=False), right=3))
        for i, note in enumerate(t.notes, start=1):
            console.print(plain(f"  [{i}] {note}"), highlight=False, soft_wrap=True)


def _table(title: str, grid: list[list[str]], right: int = 99) -> Table:
    table = Table(title=Text(title), title_justify="left")
    for i, head in enumerate(grid[0]):
        justify = "right" if i >= 1 and (i >= right or head == "tp") else "left"
        table.add_column(Text(head), justify=justify, overflow="fold")  # type: ignore[arg-type]
    for row in grid[1:]:
        table.add_row(*(Text(c) for c in row))
    return table


def _print_plan(console: Console, p: StudyPlan) -> None:
    head = Text(p.study, style="bold")
    head.append(f": {p.question}", style="")
    console.print(head)
    for leg in p.legs:
        line = Text(f"leg {leg.name}", style="bold")
        line.append(f"  {' '.join(leg.requirements) or leg.existing or ''}", style="dim")
        line.append(f"  python {leg.python} ({leg.interpreter})", style="dim")
        console.print(line, soft_wrap=True, highlight=False)
    print_cells(console, p.cells)
    warn_lines(console, p.warnings)


def register(app: typer.Typer) -> None:
    """Add ``vllmdiag study`` to the app."""
    app.add_typer(study_app, name="study")
