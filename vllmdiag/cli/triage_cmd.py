"""``vllmdiag triage LOG...``: root cause of a failed run, or root-cause groups of many.

Everything shown comes from logs and catalogues, so it is data, never Rich markup: each
string is escaped (or wrapped in ``Text``) before Rich sees it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from vllmdiag import codec
from vllmdiag.cli.output import JsonOption, emit_json, human, stderr, user_errors
from vllmdiag.errors import VllmdiagError
from vllmdiag.model.hang import HangReport
from vllmdiag.readers.triage import STDIN, Catalogue, LogTriage, RootCause, triage_file
from vllmdiag.readers.triage.attribution import group, labelled_logs, with_outcome
from vllmdiag.readers.triage.blame import blame_text
from vllmdiag.spine.journal import learn_secrets_near
from vllmdiag.spine.runner.hang_cause import recorded_hang


def triage(
    logs: Annotated[
        list[str],
        typer.Argument(
            metavar="LOG",
            help="A log file (plain or .gz), several, a run directory, or - for standard "
            "input (a paste).",
            show_default=False,
        ),
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

    The root cause is the original exception in the process that failed
    first, or the line saying a process died: not the wrappers the parent
    raises, nor tracebacks that did not end the run. Excerpts are read too:
    an exception line without its traceback header, a cut-off paste,
    docker, kubectl and journald prefixes, Ray and V0 formats.

    One log: its root cause, whose failure it is (origin), the catalogue's
    meaning and next step. Several logs or a run directory: the table.
    """
    with user_errors():
        cat = Catalogue.load(catalogue)
        if logs.count(STDIN) > 1:
            raise VllmdiagError("standard input (-) can be read once", hint="give - at most once")
        for log in logs:
            if log != STDIN:
                learn_secrets_near(Path(log))  # a cell's log echoes its secrets
        results, labels = _triage_all(logs, cat, human(as_json))
        out = human(as_json)
        warnings = [
            f"catalogue entry {name} ({where}) ran past its time budget and was skipped: "
            "simplify its pattern"
            for name, where in cat.timed_out.items()
        ]
        for w in warnings:
            stderr.print(Text(f"warning: {w}", style="yellow"))
        single = len(logs) == 1 and (logs[0] == STDIN or not Path(logs[0]).is_dir())
        if single:
            hang = recorded_hang(Path(logs[0])) if logs[0] != STDIN else None
            if as_json:
                emit_json(
                    {**codec.dump(results[0]), "hang": codec.dump(hang), "warnings": warnings}
                )
            else:
                _show_one(out, results[0])
                if hang is not None:
                    _show_hang(out, hang, Path(logs[0]).parent)
            return
        attribution = group(results, labels)
        if as_json:
            emit_json({**codec.dump(attribution), "warnings": warnings})
            return
        table = Table(title=f"root causes of {len(results)} logs", title_justify="left")
        for col in ("#", "root cause", "known, whose", "members", "next step"):
            table.add_column(col, overflow="fold")
        for i, g in enumerate(attribution.groups, 1):
            whose = g.origin + (f" ({g.package})" if g.package and g.origin != "vllm" else "")
            table.add_row(
                str(i),
                Text(g.signature),
                Text(f"{g.known or '-'}\n{whose}"),
                Text("\n".join(g.members)),
                Text(g.next_step or "-"),
            )
        out.print(table)
        for member in attribution.passed:
            out.print(f"[green]passed[/] {escape(member)}", highlight=False)
        for u in attribution.unattributed:
            line = f"[yellow]no root cause[/] {escape(u.member)}: {escape(u.note)}"
            out.print(line, highlight=False)


def _triage_all(
    logs: list[str], cat: Catalogue, out: Console
) -> tuple[list[LogTriage], dict[str, str]]:
    results: list[LogTriage] = []
    labels: dict[str, str] = {}
    files = [Path(p) for p in logs if p != STDIN]
    found = labelled_logs(files) if files else []
    if STDIN in logs:
        if sys.stdin.isatty():
            out.print("reading a log from standard input; end it with Ctrl-D", style="dim")
        results.append(triage_file(STDIN, cat, stream=sys.stdin.buffer))
        labels[STDIN] = "(stdin)"
    for f, label in found:
        results.append(with_outcome(triage_file(f, cat), f))
        labels[str(f)] = label
    return results, labels


def _show_one(out: Console, t: LogTriage) -> None:
    version = f", vLLM {t.vllm_version}" if t.vllm_version else ""
    out.print(
        f"[bold]{escape(t.path)}[/]  ({t.tracebacks} traceback(s), {t.lines} lines"
        f"{escape(version)})",
        highlight=False,
    )
    if t.passed:
        out.print("[green]passed[/]: the run recorded this cell as passed", highlight=False)
        return
    rc = t.root_cause
    if rc is None:
        out.print(f"[yellow]no root cause found[/]: {escape(t.note or '')}", highlight=False)
    else:
        _show_cause(out, rc, t.note)
    for w in t.wrappers:
        out.print(
            Text(
                f"  skipped wrapper (line {w.line}, {w.process}): {w.type}: {w.message[:160]}",
                style="dim",
            )
        )
    for b in t.benign:
        out.print(
            Text(
                f"  skipped (line {b.line}, {b.process}): {b.type}: {b.message[:100]}"
                f" -- {b.why[:160]}",
                style="dim",
            )
        )


def _show_hang(out: Console, hang: HangReport, cell_dir: Path) -> None:
    """Where a cell killed at its timeout hung, as its run recorded it."""
    out.print(f"[bold red]hung[/] {escape(hang.describe())}", highlight=False)
    if hang.stuck is not None:
        for f in hang.stuck.frames:
            out.print(f"  frame      {escape(str(f))}", highlight=False)
    for p in hang.processes:
        state = escape(p.note) if p.note else escape(str(cell_dir / p.file))
        out.print(f"  pid {p.pid:<6} {escape(p.title[:80])}: {state}", highlight=False)


def _show_cause(out: Console, rc: RootCause, note: str | None) -> None:
    what = f"{rc.type}: {rc.message}" if rc.type else rc.message
    rows = [
        ("process", f"{rc.process}, lines {rc.lines[0]}-{rc.lines[1]}"),
        ("evidence", rc.evidence),
        ("origin", blame_text(rc.origin, rc.package, rc.why)),
        ("raised in", rc.raised_in if rc.raised_in not in (None, rc.package) else None),
        ("signature", rc.signature),
        ("known", rc.known or "- (not in the catalogue)"),
        ("meaning", rc.meaning),
    ]
    out.print(f"[bold red]root cause[/] {escape(what)}", highlight=False)
    for label, value in rows:
        if value:
            out.print(f"  {label:<10} {escape(value)}", highlight=False)
    if rc.next_step:
        out.print(f"  [bold]next[/]       {escape(rc.next_step)}", highlight=False)
    if rc.advice:
        out.print(f"  advice     {escape(rc.advice)}", highlight=False)
    out.print(f"  why        {escape(rc.reason)}", highlight=False)
    if note:
        out.print(f"  note       {escape(note)}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this family's commands to the app."""
    app.command("triage")(triage)
