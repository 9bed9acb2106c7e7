"""``vllmdiag matrix RECIPE``: run a falsification matrix, or show its plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from vllmdiag.cli.live import LiveView
from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors
from vllmdiag.cli.tables import verdict_table
from vllmdiag.config import load_recipe
from vllmdiag.engine.matrix import MatrixOptions, MatrixReport, run_matrix
from vllmdiag.engine.matrix_plan import plan
from vllmdiag.errors import VllmdiagError
from vllmdiag.proc import Interrupted


def matrix(
    recipe: Path = typer.Argument(..., help="Recipe YAML, e.g. recipes/thrmma-cpu.yaml."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show cells, envs and commands."),
    resume: Path | None = typer.Option(None, "--resume", help="Finish an interrupted run dir."),
    out: Path | None = typer.Option(
        None, "--out", help="Run directory (default runs/<recipe>-<UTC>)."
    ),
    runs_root: Path = typer.Option(Path("runs"), "--runs-root", help="Where run dirs go."),
    grace: float = typer.Option(10.0, "--grace", help="Seconds between TERM and KILL."),
    allow_contaminated: bool = typer.Option(
        False, "--allow-contaminated", help="Run even if a leg fails its hygiene check."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Run a baseline plus arms over workloads, each cell in its own env, serially."""
    console = human(as_json)
    with user_errors():
        if resume is not None and out is not None:
            raise VllmdiagError(
                "--resume and --out both name a run directory",
                hint="--resume DIR continues that run in place; drop --out",
            )
        rec = load_recipe(recipe)
        if dry_run:
            p = plan(rec)
            if as_json:
                emit_json(p.to_json())
                return
            _print_plan(console, p.to_json())
            return
        opts = MatrixOptions(
            out=out,
            resume=resume,
            runs_root=runs_root,
            grace_s=grace,
            allow_contaminated=allow_contaminated,
        )
        with LiveView(console) as view:
            report = run_matrix(rec, opts, view)
        _print_report(console, report)
        if as_json:
            emit_json(report.to_json())
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


def _print_plan(console: Console, data: dict[str, Any]) -> None:
    console.print(f"[bold]{data['recipe']}[/]: {data['question']}")
    legs = Table(title="legs", title_justify="left")
    for col in ("leg", "key", "python", "requirements", "exclude_newer", "existing"):
        legs.add_column(col)
    for leg in data["legs"]:
        legs.add_row(
            leg["name"],
            leg["key"],
            leg["python"],
            " ".join(leg["requirements"]),
            leg["exclude_newer"] or "",
            leg["existing"] or "",
        )
    console.print(legs)
    cells = Table(title="cells (in run order)", title_justify="left")
    for col in ("cell", "leg", "env", "command"):
        cells.add_column(col, overflow="fold")
    for c in data["cells"]:
        env = " ".join(f"{k}={v}" for k, v in c["env"].items())
        cells.add_row(c["id"], c["leg"], env, " ".join(c["argv"]))
    console.print(cells)


def _print_report(console: Console, report: MatrixReport) -> None:
    console.print()
    console.print(
        verdict_table(
            report.verdict,
            list(report.recipe.workloads),
            f"{report.recipe.name}: {report.recipe.question}",
        )
    )
    console.print(f"\n[bold]Verdict.[/] {report.verdict.summary}")
    console.print(f"summary: {report.run_dir / 'summary.md'}")
    if report.interrupted:
        console.print(
            f"[yellow]interrupted[/]: resume with vllmdiag matrix "
            f"{report.recipe.source} --resume {report.run_dir}"
        )


def register(app: typer.Typer) -> None:
    app.command("matrix")(matrix)
