"""``vllmdiag fingerprint LOG`` and ``vllmdiag fingerprint diff A B``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from vllmdiag.cli.output import JsonOption, emit_json, human, plain, user_errors
from vllmdiag.errors import VllmdiagError
from vllmdiag.fingerprint import Fingerprint, fingerprint_diff, fingerprint_file

_STYLE = {"same": "green", "different": "bold red", "missing": "yellow"}


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, tuple):
        return ", ".join(value) if value else "(none)"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def fingerprint(
    args: Annotated[
        list[str],
        typer.Argument(metavar="LOG | diff A B", help="One run log, or 'diff' and two logs."),
    ],
    as_json: bool = JsonOption,
) -> None:
    """What a run actually did, read from its log; or how two runs differ.

    Fields: vLLM version, attention backend (and the multimodal encoder's), MoE backend,
    prepare/finalize class and SM split, KV cache tokens, max concurrency, chunked
    prefill, CUDA graphs or eager, encoder cache budget, OMP_NUM_THREADS,
    unknown-variable warnings, plugins.

    `vllmdiag fingerprint LOG` shows one run.
    `vllmdiag fingerprint diff A B` prints same / different / missing per field
    (missing: a log does not say, so nothing is ruled out by it).
    """
    with user_errors():
        if args[0] == "diff" and not (len(args) == 1 and Path("diff").is_file()):
            if len(args) != 3:
                raise VllmdiagError(
                    "diff takes exactly two logs",
                    hint="vllmdiag fingerprint diff A.log B.log",
                )
            _diff(Path(args[1]), Path(args[2]), as_json)
            return
        if len(args) != 1:
            raise VllmdiagError(
                f"expected one log, got {len(args)} arguments",
                hint="vllmdiag fingerprint LOG, or vllmdiag fingerprint diff A B",
            )
        fp = fingerprint_file(_existing(Path(args[0])))
        if as_json:
            emit_json(fp.to_json())
            return
        table = Table(title=plain(f"fingerprint of {args[0]}"), title_justify="left")
        table.add_column("field", no_wrap=True)
        table.add_column("value", overflow="fold")
        for name in Fingerprint.field_names():
            table.add_row(plain(name), plain(_show(getattr(fp, name))))
        human(as_json).print(table)


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise VllmdiagError("no such log file", where=str(path), hint="give a run's log file")
    return path


def _diff(a: Path, b: Path, as_json: bool) -> None:
    fa, fb = fingerprint_file(_existing(a)), fingerprint_file(_existing(b))
    rows = fingerprint_diff(fa, fb)
    if as_json:
        emit_json({"a": str(a), "b": str(b), "fields": [r.to_json() for r in rows]})
        return
    table = Table(title=plain(f"A = {a}\nB = {b}"), title_justify="left")
    table.add_column("field", no_wrap=True)
    for col in ("A", "B", ""):
        table.add_column(col, overflow="fold")
    for r in rows:
        style = _STYLE[r.status]
        table.add_row(plain(r.field), plain(_show(r.a)), plain(_show(r.b)), plain(r.status, style))
    human(as_json).print(table)


def register(app: typer.Typer) -> None:
    """Add this family's commands to the app."""
    app.command("fingerprint")(fingerprint)
