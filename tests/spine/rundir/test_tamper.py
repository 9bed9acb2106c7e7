"""A run directory tampered with between a run and its resume: a result of an unknown
schema, a result edited to flip its outcome, a symlinked cell directory or result file,
deeply nested JSON. Each is refused or re-run with a warning; nothing is read or written
outside the run directory, and no traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from vllmdiag.cli.app import app

CELL = "r1.baseline.w"


def run_once(tmp_path: Path) -> tuple[Path, Path]:
    recipe = tmp_path / "q.yaml"
    recipe.write_text(
        f"name: q\nquestion: q\nlegs:\n  here: {{path: {sys.executable}}}\n"
        "baseline: {leg: here}\n"
        'workloads:\n  w: {command: ["{python}", "-c", "raise SystemExit(1)"]}\ngpus: 0\n'
    )
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["matrix", str(recipe), "--out", str(run)])
    assert result.exit_code == 0, result.output
    return recipe, run


def resume(recipe: Path, run: Path) -> str:
    result = CliRunner().invoke(app, ["matrix", str(recipe), "--resume", str(run)])
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1), result.output
    return result.output


def test_a_result_of_an_unknown_schema_is_not_reused(tmp_path: Path) -> None:
    recipe, run = run_once(tmp_path)
    file = run / "cells" / CELL / "result.json"
    data = json.loads(file.read_text())
    file.write_text(json.dumps({**data, "schema": 999}))
    out = resume(recipe, run)
    assert "result schema 999; this vllmdiag reads 1, 2; the cell runs again" in out
    assert "(reused)" not in out
    assert json.loads(file.read_text())["schema"] == 2  # rewritten by the re-run


def test_a_result_edited_to_pass_is_caught_by_the_journal(tmp_path: Path) -> None:
    recipe, run = run_once(tmp_path)
    file = run / "cells" / CELL / "result.json"
    data = json.loads(file.read_text())
    assert data["outcome"] == "fail"
    file.write_text(json.dumps({**data, "outcome": "pass", "rc": 0}))
    out = resume(recipe, run)
    assert "says pass, but the journal recorded fail for this cell" in out
    assert json.loads(file.read_text())["outcome"] == "fail"  # the cell ran again
    summary = (run / "summary.md").read_text()
    assert "fail" in summary


def test_a_symlinked_result_is_not_read(tmp_path: Path) -> None:
    recipe, run = run_once(tmp_path)
    file = run / "cells" / CELL / "result.json"
    elsewhere = tmp_path / "planted.json"
    data = json.loads(file.read_text())
    elsewhere.write_text(json.dumps({**data, "outcome": "pass"}))
    file.unlink()
    file.symlink_to(elsewhere)
    out = resume(recipe, run)
    assert "a symlink in the run directory; ignored, the cell runs again" in out
    assert json.loads(elsewhere.read_text())["outcome"] == "pass"  # never written through


def test_a_symlinked_cell_directory_stops_writes_outside(tmp_path: Path) -> None:
    recipe, run = run_once(tmp_path)
    cell = run / "cells" / CELL
    outside = tmp_path / "outside"
    cell.rename(outside)
    cell.symlink_to(outside, target_is_directory=True)
    before = sorted(p.name for p in outside.iterdir())
    result = CliRunner().invoke(app, ["matrix", str(recipe), "--resume", str(run)])
    assert "Traceback" not in result.output
    assert result.exit_code == 1, result.output
    assert f"{cell}: {CELL} in the run directory is a symlink" in result.output
    assert sorted(p.name for p in outside.iterdir()) == before


def test_report_window_nested_too_deep_is_an_error(tmp_path: Path) -> None:
    _, run = run_once(tmp_path)
    window = tmp_path / "w.json"
    window.write_text("[" * 100_000 + "]" * 100_000)
    result = CliRunner().invoke(app, ["report", str(run), "--window", str(window)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "not a JSON window result" in result.output and "nests deeper" in result.output


def test_an_output_file_path_naming_a_fifo_or_device_is_never_replaced(tmp_path: Path) -> None:
    import os
    import stat

    _, run = run_once(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(fifo)])
    assert result.exit_code == 1, result.output
    assert "a device, a FIFO or a socket is there, not a file to replace" in result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO, not a file put there
