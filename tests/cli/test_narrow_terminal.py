"""Output on an 80-column terminal and through a pipe: names whole, nothing cut with an
ellipsis; and the live view's [k/N] counting up, reused cells included."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from vllmdiag.cli.app import app
from vllmdiag.cli.tables import print_table
from vllmdiag.services.config import load_arm_library


def test_arms_list_through_a_pipe_cuts_nothing() -> None:
    result = CliRunner().invoke(app, ["arms", "list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    for arm in load_arm_library():
        assert arm.name in result.output
        assert arm.describe() in result.output  # the change, on one line, whole


def test_an_80_column_terminal_wraps_prose_at_spaces_and_keeps_names_whole() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=True, color_system=None)
    table = Table()
    table.add_column("name", no_wrap=True)
    table.add_column("change")
    long = "attention-backend-flash-attn-with-a-much-longer-name-than-usual"
    table.add_row(long, "flag --attention-backend FLASH_ATTN " * 3)
    print_table(console, table)
    text = buf.getvalue()
    assert long in text and "--attention-backend" in text and "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 100  # wider only as needed


def test_a_matrix_verdict_table_keeps_arm_and_workload_names_whole(tmp_path: Path) -> None:
    recipe = tmp_path / "w.yaml"
    fail = '{command: ["{python}", "-c", "raise SystemExit(1)", "{flags}"]}'
    recipe.write_text(
        f"name: w\nquestion: does anything change it?\nlegs:\n  here: {{path: {sys.executable}}}\n"
        "baseline: {leg: here}\n"
        f"workloads:\n  wrapper-import-long-name: {fail}\n  kernel-class: {fail}\n"
        f"  third-workload-name: {fail}\n"
        "arms: [attention-backend-flash-attn, omp-num-threads-1]\ngpus: 0\n"
    )
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["matrix", str(recipe), "--out", str(out)], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    table = result.output[result.output.index("w: does anything") :]
    for name in ("attention-backend-flash-attn", "wrapper-import-long-name", "third-workload-name"):
        assert name in table, table
    assert "…" not in table

    # resume with the first cell's result gone: the count goes up from 1, reused included
    first = out / "cells" / "r1.baseline.wrapper-import-long-name" / "result.json"
    first.unlink()
    again = CliRunner().invoke(app, ["matrix", str(recipe), "--resume", str(out)])
    assert again.exit_code == 0, again.output
    counts = [int(k) for k in re.findall(r"^\[(\d+)/9\]", again.output, re.M)]
    assert counts == list(range(1, 10)), again.output
    assert again.output.count("(reused)") == 8
