"""``vllmdiag fingerprint LOG`` and ``vllmdiag fingerprint diff A B``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vllmdiag import codec
from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors
from vllmdiag.errors import VllmdiagError
from vllmdiag.model.shape import WorkloadShape
from vllmdiag.model.startup import StartupTimeline
from vllmdiag.readers.fingerprint import Fingerprint, fingerprint_diff, fingerprint_file
from vllmdiag.readers.fingerprint.startup import dominant, startup_diff
from vllmdiag.services.config.source import probe, regular_file

_STYLE = {"same": "green", "different": "bold red", "missing": "yellow"}


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, WorkloadShape):
        return value.describe()
    if isinstance(value, tuple):
        return ", ".join(value) if value else "(none)"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def fingerprint(
    args: Annotated[
        list[str],
        typer.Argument(metavar="LOG | diff A B", help="One run log, or 'diff' and two logs."),
    ],
    leg: Annotated[
        Path | None,
        typer.Option(
            "--leg",
            metavar="VENV",
            help="The leg the run used (a venv or its python): its hygiene findings "
            "explain a start-up phase that dominates.",
        ),
    ] = None,
    as_json: bool = JsonOption,
) -> None:
    """What a run actually did, read from its log; or how two runs differ.

    Fields: vLLM version, attention backend (and the multimodal encoder's), MoE backend,
    prepare/finalize class and SM split, KV cache tokens, max concurrency, chunked
    prefill, CUDA graphs or eager, encoder cache budget, OMP_NUM_THREADS,
    unknown-variable warnings, plugins, the workload's totals (prompts, prompt and
    output tokens, as the benchmark reports them) and the engine's start-up timeline
    (imports, config, weights, torch.compile, KV cache, CUDA graphs, warm-up, ready).

    `vllmdiag fingerprint LOG` shows one run.
    `vllmdiag fingerprint diff A B` prints same / different / missing per field
    (missing: a log does not say, so nothing is ruled out by it) and which start-up
    phase moved.
    """
    with user_errors():
        if args[0] == "diff" and not (len(args) == 1 and Path("diff").is_file()):
            if len(args) != 3:
                raise VllmdiagError(
                    "diff takes exactly two logs",
                    hint="vllmdiag fingerprint diff A.log B.log",
                )
            _diff(Path(args[1]), Path(args[2]), as_json, _findings(leg))
            return
        if len(args) != 1:
            raise VllmdiagError(
                f"expected one log, got {len(args)} arguments",
                hint="vllmdiag fingerprint LOG, or vllmdiag fingerprint diff A B",
            )
        fp = fingerprint_file(_existing(Path(args[0])))
        findings = _findings(leg)
        top = dominant(fp.startup, findings) if fp.startup else None
        fp = replace(fp, startup_dominant=top)
        if as_json:
            emit_json(codec.dump(fp))
            return
        out = human(as_json)
        table = Table(title=f"fingerprint of {escape(args[0])}", title_justify="left")
        table.add_column("field", no_wrap=True)
        table.add_column("value", overflow="fold")
        for name in Fingerprint.field_names():
            table.add_row(name, escape(_show(getattr(fp, name))))
        out.print(table)
        if fp.startup is not None:
            _print_startup(out, fp.startup)
            if top is not None:
                why = f": {escape(top.explanation)}" if top.explanation else ""
                out.print(
                    f"[bold]{escape(top.phase.name)}[/] took {top.phase.seconds:.0f} s, "
                    f"{top.share:.0%} of the start-up{why}",
                    highlight=False,
                )


def _existing(path: Path) -> Path:
    return regular_file(path, what="log file", suffixes=(".log", ".txt", ".out", ".err", ".gz"))


def _findings(leg: Path | None) -> list[tuple[str, str]]:
    """The hygiene findings of ``leg`` worth naming (warnings and contaminations)."""
    if leg is None:
        return []
    from vllmdiag.readers.hygiene import doctor
    from vllmdiag.services.envs import EnvCache, LegSpec

    if probe(leg, what="environment") is None:
        raise VllmdiagError("no such environment", where=str(leg), hint="give a venv or a python")
    env = EnvCache().ensure(LegSpec(name=leg.name or str(leg), existing=leg))
    report = doctor(env, check_gpu=False)
    return [(f.code, f.message) for f in report.findings if f.severity != "ok"]


def _print_startup(out: Console, t: StartupTimeline) -> None:
    since = "process start" if t.from_process_start else "the first log line"
    state = t.state()
    table = Table(title=f"start-up: {t.total_s:.0f} s from {since} ({state})", title_justify="left")
    for col in ("phase", "seconds", "share"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for p in t.phases:
        share = p.seconds / t.total_s if t.total_s else 0.0
        table.add_row(escape(p.name), f"{p.seconds:.0f}", f"{share:.0%}")
    out.print(table)


def _diff(a: Path, b: Path, as_json: bool, findings: list[tuple[str, str]]) -> None:
    fa, fb = fingerprint_file(_existing(a)), fingerprint_file(_existing(b))
    rows = fingerprint_diff(fa, fb)
    phases = startup_diff(fa.startup, fb.startup)
    top_b = dominant(fb.startup, findings) if fb.startup else None
    if as_json:
        emit_json(
            {
                "a": str(a),
                "b": str(b),
                "fields": codec.dump(tuple(rows)),
                "startup": codec.dump(phases),
                "startup_dominant_b": codec.dump(top_b),
            }
        )
        return
    out = human(as_json)
    table = Table(title=f"A = {escape(str(a))}\nB = {escape(str(b))}", title_justify="left")
    table.add_column("field", no_wrap=True)
    for col in ("A", "B", ""):
        table.add_column(col, overflow="fold")
    for r in rows:
        style = _STYLE[r.status]
        table.add_row(
            r.field, escape(_show(r.a)), escape(_show(r.b)), f"[{style}]{r.status.value}[/]"
        )
    out.print(table)
    if phases is None:
        return
    moved = Table(title="start-up phases (seconds)", title_justify="left")
    for col in ("phase", "A", "B", "B - A"):
        moved.add_column(col, justify="left" if col == "phase" else "right")
    for d in phases.phases:
        moved.add_row(escape(d.name), _secs(d.a_s), _secs(d.b_s), f"{d.delta_s:+.0f}")
    out.print(moved)
    first = phases.phases[0] if phases.phases else None
    if first is not None and abs(first.delta_s) >= 1:
        why = ""
        if top_b is not None and top_b.phase.name == first.name and top_b.explanation:
            why = f": {escape(top_b.explanation)}"
        out.print(
            f"[bold]{escape(first.name)}[/] moved most ({first.delta_s:+.0f} s){why}",
            highlight=False,
        )


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def register(app: typer.Typer) -> None:
    """Add this family's commands to the app."""
    app.command("fingerprint")(fingerprint)
