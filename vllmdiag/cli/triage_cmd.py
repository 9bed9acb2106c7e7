"""``vllmdiag triage LOG...``: root cause of a failed run, or root-cause groups of many."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors
from vllmdiag.triage import Catalogue, LogTriage, triage_file
from vllmdiag.triage.attribution import group, labelled_logs


def triage(
    logs: Annotated[
        list[Path],
        typer.Argument(help="A log file, several, or a run directory (its *.log files)."),
    ],
    catalogue: Annotated[
        Path | None,
        typer.Option(
            "--catalogue",
            help="Extra known signatures (YAML, same format as the bundled catalogue); "
            "default $VLLMDIAG_CATALOGUE.",
        ),
    ] = None,
    as_json: bool = JsonOption,
) -> None:
    """Name the root cause of a failed run, or group many runs by root cause.

    The root cause is the original exception in the process that failed first, not the
    wrappers the parent raises nor tracebacks that did not end the run.
    One file: its root cause, its signature, the catalogue's meaning and next step, and
    the wrappers skipped. Several files or a directory: the attribution table.
    """
    with user_errors():
        cat = Catalogue.load(catalogue)
        single = len(logs) == 1 and not logs[0].is_dir()
        found = labelled_logs(logs)
        results = [triage_file(f, cat) for f, _ in found]
        out = human(as_json)
        if single:
            if as_json:
                emit_json(results[0].to_json())
            else:
                _show_one(out, results[0])
            return
        attribution = group(results, {str(f): label for f, label in found})
        if as_json:
            emit_json({**attribution.to_json(), "logs": [r.to_json() for r in results]})
            return
        table = Table(title=f"root causes of {len(results)} logs", title_justify="left")
        for col in ("#", "root cause", "known", "members", "next step"):
            table.add_column(col, overflow="fold")
        for i, g in enumerate(attribution.groups, 1):
            table.add_row(
                str(i), g.signature, g.known or "-", "\n".join(g.members), g.next_step or "-"
            )
        out.print(table)
        for member, note in attribution.unattributed:
            out.print(f"[yellow]no root cause[/] {member}: {note}", highlight=False)


def _show_one(out: Console, t: LogTriage) -> None:
    rc = t.root_cause
    out.print(
        f"[bold]{t.path}[/]  ({t.tracebacks} traceback(s), {t.lines} lines"
        f"{', vLLM ' + t.vllm_version if t.vllm_version else ''})",
        highlight=False,
    )
    if rc is None:
        out.print(f"[yellow]no root cause found[/]: {t.note}", highlight=False)
    else:
        out.print(f"[bold red]root cause[/] {rc.type}: {rc.message}", highlight=False)
        out.print(f"  process    {rc.process}, lines {rc.lines[0]}-{rc.lines[1]}", highlight=False)
        out.print(f"  signature  {rc.signature}", highlight=False)
        out.print(f"  known      {rc.known or '- (not in the catalogue)'}", highlight=False)
        if rc.meaning:
            out.print(f"  meaning    {rc.meaning}", highlight=False)
        if rc.next_step:
            out.print(f"  [bold]next[/]       {rc.next_step}", highlight=False)
        out.print(f"  why        {rc.reason}", highlight=False)
        if t.note:
            out.print(f"  note       {t.note}", highlight=False)
    for w in t.wrappers:
        out.print(
            f"  [dim]skipped wrapper (line {w.line}, {w.process}): {w.type}: {w.message[:160]}[/]",
            highlight=False,
        )
    for b in t.benign:
        out.print(
            f"  [dim]skipped (line {b.line}, {b.process}): {b.type}: {b.message[:100]}"
            f" -- {b.why[:160]}[/]",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add this family's commands to the app."""
    app.command("triage")(triage)
