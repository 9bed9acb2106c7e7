"""``vllmdiag report`` through the CLI in-process: the body on stdout as plain text (never
Rich markup), ``--out`` and ``--json``, and every user mistake as one line saying what
was wrong and where, a hint, exit 1, no traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app

CPU = FIXTURES / "report" / "thrmma-cpu"
WINDOW = FIXTURES / "report" / "window-thrmma.json"
SHAPE = FIXTURES / "vllm026" / "shape"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["report", *map(str, args)])


def assert_user_error(result: Result, where: str, *fragments: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2, lines
    assert lines[0].startswith(f"error: {where}: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert len(lines) == 2 and lines[1].startswith("  hint: "), lines


def test_the_body_is_printed_as_plain_text_and_the_target_on_stderr() -> None:
    result = run(CPU, "--window", WINDOW)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("### Your current environment\n")
    assert "| **`nvidia-cutlass-dsl-4.5.3`** |" in result.stdout
    assert "target: vllm (dependency-metadata, template vllm-bug)" in result.stderr
    assert "title: [Bug]: vllm 0.18.0 admits nvidia-cutlass-dsl" in result.stderr


def test_out_writes_the_body_and_json_gives_the_whole_report(tmp_path: Path) -> None:
    out = tmp_path / "issue.md"
    result = run(CPU, "--window", WINDOW, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert out.read_text() == report["body"]
    assert report["target"]["kind"] == "dependency-metadata"
    assert [s["id"] for s in report["sections"]][:3] == ["summary", "environment", "reproduction"]
    assert report["redactions"]["host-name"] == 3


def test_text_from_the_run_is_never_read_as_markup(tmp_path: Path) -> None:
    run_dir = shutil.copytree(CPU, tmp_path / "run")
    for file in run_dir.glob("cells/*/result.json"):
        data = json.loads(file.read_text())
        if data["root_cause"]:
            data["root_cause"]["signature"] = "ValueError: [bold red]boom[/] [link=x]y[/link]"
            file.write_text(json.dumps(data))
    result = run(run_dir)
    assert result.exit_code == 0, result.output
    assert "`ValueError: [bold red]boom[/] [link=x]y[/link]`" in result.stdout
    assert "[bold red]boom[/]" in result.stderr  # the title, as written


@pytest.mark.parametrize("as_json", [False, True])
def test_a_missing_run_directory(tmp_path: Path, as_json: bool) -> None:
    missing = tmp_path / "nope"
    result = run(missing, *(["--json"] if as_json else []))
    assert_user_error(result, str(missing), "no such directory")
    if as_json:
        assert json.loads(result.stdout)["where"] == str(missing)
    else:
        assert result.stdout == ""


def test_a_file_and_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    file = tmp_path / "f.txt"
    file.write_text("x")
    assert_user_error(run(file), str(file), "not a directory")
    assert_user_error(run(tmp_path), str(tmp_path), "not a vllmdiag run directory")


def test_a_run_where_nothing_failed() -> None:
    result = run(SHAPE)  # a metric matrix: one cell passed, one gave no result
    assert_user_error(result, str(SHAPE), "no cell failed in this run")
    assert "for a slowdown" in result.stderr


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("not json", "not a JSON window result"),
        ('{"error": "no such package", "where": "PKG", "hint": "x"}', "holds the error"),
        ('{"package": "x", "versions": "many"}', "not a window result: "),
        ("[1, 2]", "not a window result: the top level"),
    ],
)
def test_a_window_file_that_is_not_a_window(tmp_path: Path, content: str, fragment: str) -> None:
    window = tmp_path / "w.json"
    window.write_text(content)
    assert_user_error(run(CPU, "--window", window), str(window), fragment)


def test_a_missing_window_file(tmp_path: Path) -> None:
    missing = tmp_path / "w.json"
    assert_user_error(run(CPU, "--window", missing), str(missing), "cannot read the window")


def test_a_profile_that_is_not_a_profile_run(tmp_path: Path) -> None:
    assert_user_error(run(CPU, "--profile", tmp_path), str(tmp_path), "not a profile run directory")
    missing = tmp_path / "gone"
    assert_user_error(run(CPU, "--profile", missing), str(missing), "no such directory")


def test_out_that_cannot_be_written(tmp_path: Path) -> None:
    assert_user_error(run(CPU, "--out", tmp_path), str(tmp_path), "cannot write the report")
    assert not list(tmp_path.glob(".*.tmp"))
