"""``vllmdiag matrix RECIPE``: run a falsification matrix, or show its plan."""

from __future__ import annotations

import shlex
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
from vllmdiag.cli.forms import ResumeDir
from vllmdiag.cli.live import LiveView
from vllmdiag.cli.output import JsonOption, emit_json, human, plain, user_errors, warn_lines
from vllmdiag.cli.tables import print_cells, print_table, verdict_table
from vllmdiag.cli.values import path_value
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.matrix import MatrixOptions, MatrixPlan, MatrixReport, plan_matrix, run_matrix
from vllmdiag.jobs.matrix.rejudge import rejudge
from vllmdiag.plan.bench_check import recipe_warnings
from vllmdiag.services.config import load_recipe, numbers
from vllmdiag.services.proc import Interrupted
from vllmdiag.spine.runner.slots import check_gpu_count


class _MatrixCommand(ResumeDir):
    """``matrix RECIPE`` runs; ``matrix verdict RUN_DIR`` decides a run again."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        if args[:1] == [VERDICT] and not Path(VERDICT).is_file():
            rest = [a for a in args[1:] if a != "--json"]
            if len(rest) != 1 or rest[0].startswith("-"):
                raise typer.BadParameter(
                    "'matrix verdict' takes one RUN_DIR (and --json), nothing else",
                    ctx=ctx,
                    param_hint="verdict RUN_DIR",
                )
            ctx.meta[VERDICT] = True
            args = args[1:]
        return super().parse_args(ctx, args)


VERDICT = "verdict"


def matrix(
    ctx: typer.Context,
    recipe: Path = typer.Argument(
        ...,
        help="Recipe YAML, e.g. recipes/thrmma-cpu.yaml; or 'verdict RUN_DIR': decide a "
        "run again from its files.",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Show every cell, its env and its exact command; run nothing."
    ),
    resume: Path | None = typer.Option(
        None,
        "--resume",
        parser=path_value,
        metavar="DIR",
        help="Finish an interrupted run in its directory: cells with a result are kept.",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        parser=path_value,
        metavar="DIR",
        help="Run directory (default RUNS_ROOT/<recipe>-<UTC>).",
    ),
    runs_root: Path = typer.Option(
        Path("runs"),
        "--runs-root",
        parser=path_value,
        metavar="DIR",
        help="Where a new run directory is created when --out is not given.",
    ),
    grace: float = typer.Option(
        10.0,
        "--grace",
        metavar="SECONDS",
        help="On timeout or Ctrl-C: seconds between TERM and KILL of a cell's processes.",
    ),
    allow_contaminated: bool = typer.Option(
        False, "--allow-contaminated", help="Run even if a leg fails its hygiene check."
    ),
    wait: bool = typer.Option(
        False,
        "--wait",
        help="If another matrix holds this machine's lock, wait for it instead of stopping.",
    ),
    repeats: int | None = RepeatsOption,
    baseline_between_arms: bool = typer.Option(
        False,
        "--baseline-between-arms",
        help="Measure the baseline again before each arm after the first, and say whether "
        "it drifted over the run (early against late, beyond its own spread).",
    ),
    executor: ExecutorKind = ExecutorOption,
    address: str | None = AddressOption,
    gpus: int | None = GpusOption,
    as_json: bool = JsonOption,
) -> None:
    """Run a baseline plus arms over workloads, each cell in its own env: one at a time
    per node for metric matrices, side by side on disjoint GPUs for pass/fail ones.
    'vllmdiag matrix verdict RUN_DIR' runs nothing: it decides the run in RUN_DIR again
    from its manifest.json and result.json files and rewrites summary.md, summary.txt
    and verdict.json."""
    console = human(as_json)
    if ctx.meta.get(VERDICT):
        _verdict_again(console, recipe, as_json)
        return
    with user_errors():
        if resume is not None and out is not None:
            raise VllmdiagError(
                "--resume and --out both name a run directory",
                hint="--resume DIR continues that run in place; drop --out",
            )
        # The options a run would refuse are refused by a dry run too: it shows what the
        # same command line would do, so it must not pass what the run cannot take.
        grace_s = numbers.seconds(grace, "--grace", zero_ok=True, maximum=numbers.MAX_GRACE_S)
        check_gpu_count(gpus)
        rec = with_repeats(load_recipe(recipe), repeats)
        if baseline_between_arms:
            rec = rec.model_copy(update={"baseline_between_arms": True})
        if not dry_run:
            warn_lines(console, recipe_warnings(rec))
        if dry_run:
            p = plan_matrix(rec, run_dir=resume or out)
            if as_json:
                emit_json(codec.dump(p))
                return
            _print_plan(console, p)
            return
        opts = MatrixOptions(
            out=out,
            resume=resume,
            runs_root=runs_root,
            grace_s=grace_s,
            allow_contaminated=allow_contaminated,
            wait=wait,
        )
        with connected(console, executor, address, gpus) as ex, LiveView(console) as view:
            report = run_matrix(rec, replace(opts, executor=ex), view)
        _print_report(console, report)
        if as_json:
            emit_json(codec.dump(report))
        if report.interrupted:
            raise typer.Exit(Interrupted(report.stopped_by or "SIGINT").exit_code)
        if report.cells_run == 0:
            console.print(
                "[bold red]error:[/] no cell could run: every cell is an error "
                f"(see {report.run_dir / 'summary.md'} and the legs' logs under "
                f"{report.run_dir / 'envs'})",
                highlight=False,
            )
            raise typer.Exit(1)


def _verdict_again(console: Console, run_dir: Path, as_json: bool) -> None:
    with user_errors():
        report = rejudge(run_dir, lambda text: console.print(plain(f"warning: {text}")))
        _print_report(console, report)
        if as_json:
            emit_json(codec.dump(report.verdict))


def _print_plan(console: Console, p: MatrixPlan) -> None:
    """The plan as text a user can paste from: each command on one line, quoted with
    ``shlex.join``, never wrapped or cut (and never parsed as markup)."""
    head = Text(p.recipe, style="bold")
    head.append(f": {p.question}", style="")
    console.print(head)
    legs = Table(title="legs", title_justify="left")
    for col in ("leg", "key", "python", "interpreter", "requirements", "exclude_newer", "existing"):
        legs.add_column(col, overflow="fold")
    for leg in p.legs:
        legs.add_row(
            *(
                plain(v)
                for v in (
                    leg.name,
                    leg.key,
                    leg.python,
                    leg.interpreter,
                    " ".join(leg.requirements),
                    leg.exclude_newer or "",
                    leg.existing or "",
                )
            )
        )
    console.print(legs)
    print_cells(console, p.cells)
    warn_lines(console, p.warnings)


def _print_report(console: Console, report: MatrixReport) -> None:
    console.print()
    print_table(
        console,
        verdict_table(report.verdict, report.workloads, f"{report.recipe}: {report.question}"),
    )
    verdict = Text("\nVerdict. ", style="bold")
    verdict.append(report.verdict.summary, style="")
    console.print(verdict)
    warn_lines(console, (f"{r.id}: {w}" for r in report.cells for w in r.warnings))
    console.print(plain(f"summary: {report.run_dir / 'summary.md'}"))
    if report.interrupted:
        again = shlex.join(
            ["vllmdiag", "matrix", str(report.source), "--resume", str(report.run_dir)]
        )
        line = Text("interrupted", style="yellow")
        line.append(f": resume with {again}", style="")
        console.print(line, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("matrix", cls=_MatrixCommand)(matrix)
