"""Paths and numbers a user gives on the command line: devices, FIFOs, names over 255
bytes, empty paths, unbounded counts, NaN and infinite seconds, a broken catalogue. Each
is a one-line error from the real CLI before any run directory exists."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import REPO
from vllmdiag.cli.app import app

ROOT = REPO
RECIPE = ROOT / "recipes" / "thrmma-cpu.yaml"
LONG = "a" * 300


def cli(*args: str, env: dict[str, str] | None = None, code: int = 1) -> str:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


def quick_recipe(tmp_path: Path) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(
        f"name: r\nquestion: q\nlegs:\n  here: {{path: {sys.executable}}}\n"
        "baseline: {leg: here}\n"
        'workloads:\n  w: {command: ["{python}", "-c", "raise SystemExit(1)"]}\n'
        "gpus: 0\n"
    )
    return path


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("/dev/zero", "/dev/zero: this is a character device, not a log file"),
        ("/dev/null", "/dev/null: this is a character device, not a log file"),
    ],
)
def test_triage_of_a_device_says_what_it_is(target: str, said: str) -> None:
    out = cli("triage", target)
    assert out.startswith(f"error: {said}") and "COMMAND > run.log" in out


def test_triage_of_a_fifo_says_so_and_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = cli("triage", str(fifo))
    assert f"{fifo}: this is a FIFO (named pipe), not a log file" in out


def test_a_misspelled_log_or_recipe_gets_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "engine.log").write_text("hello\n")
    out = cli("triage", str(tmp_path / "engien.log"))
    assert f"did you mean {str(tmp_path / 'engine.log')!r}?" in out
    out = cli("matrix", str(ROOT / "recipes" / "thrmma_cpu.yaml"), "--dry-run")
    assert "no such recipe file" in out and f"did you mean {str(RECIPE)!r}?" in out
    out = cli("matrix", "thrma-cpu", "--dry-run")
    assert "did you mean the shipped recipe 'thrmma-cpu'?" in out


@pytest.mark.parametrize(
    "command",
    [["triage"], ["matrix"], ["study"], ["fingerprint"], ["compare", "X"], ["report"],
     ["profile", "diff", "X"], ["fingerprint", "diff", "X"]],
    ids=" ".join,
)  # fmt: skip
def test_a_path_with_a_name_over_255_bytes_is_an_error(tmp_path: Path, command: list[str]) -> None:
    for path in (tmp_path / LONG, tmp_path / LONG / "x.yaml"):
        extra = ["--dry-run"] if command[0] in ("matrix", "study") else []
        args = [str(path) if a == "X" else a for a in command]
        if "X" not in command:
            args.append(str(path))
        else:
            args.insert(len(command) - 1, str(path))
        out = cli(*args, *extra)
        assert "too long for this system" in out and "255" in out, out


def test_gpus_out_of_bounds_is_refused_before_a_run_directory(tmp_path: Path) -> None:
    recipe = quick_recipe(tmp_path)
    for gpus in ("99999999", "-1"):
        out = cli("matrix", str(recipe), "--gpus", gpus, "--out", str(tmp_path / "run"))
        assert f"--gpus {gpus}: a GPU count is from 0 to 4,096" in out
        assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("grace", ["nan", "inf", "-1", "1e9"])
def test_grace_must_be_finite_and_bounded(tmp_path: Path, grace: str) -> None:
    recipe = quick_recipe(tmp_path)
    out = cli("matrix", str(recipe), "--grace", grace, "--out", str(tmp_path / "run"))
    assert out.startswith("error: --grace: ")
    assert any(w in out for w in ("not a number of seconds", "is no time", "allowed")), out
    assert not (tmp_path / "run").exists()


def test_an_empty_out_is_refused_not_the_current_directory(tmp_path: Path) -> None:
    recipe = quick_recipe(tmp_path)
    for flag in ("--out", "--runs-root"):
        out = cli("matrix", str(recipe), flag, "", code=2)
        assert "the path is empty" in out
    out = cli("study", str(recipe), "--out", "", code=2)
    assert "the path is empty" in out


def test_matrix_out_naming_a_file_is_an_error(tmp_path: Path) -> None:
    recipe = quick_recipe(tmp_path)
    target = tmp_path / "afile"
    target.write_text("x")
    out = cli("matrix", str(recipe), "--out", str(target))
    assert f"{target}: the run directory is an existing file" in out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--timeout", "nan"], "--timeout: nan is not a number of seconds"),
        (["--timeout", "inf"], "--timeout: inf is not a number of seconds"),
        (["--timeout", "0"], "--timeout: 0 seconds is no time"),
        (["--metric", "m", "--threshold", "nan"], "--threshold: nan is not a ratio"),
        (["--metric", "m", "--threshold", "-inf"], "--threshold: -inf is not a ratio"),
    ],
)
def test_bisect_numbers_must_be_finite(args: list[str], said: str) -> None:
    out = cli("bisect", "packaging", "--good", "23.0", "--bad", "24.0", *args, "--", "true")
    assert said in out


@pytest.mark.parametrize("kind", ["zero", "fifo", "missing", "deep", "scalar"])
def test_a_broken_catalogue_stops_the_matrix_before_any_cell(tmp_path: Path, kind: str) -> None:
    recipe = quick_recipe(tmp_path)
    cat = tmp_path / "cat.yaml"
    if kind == "zero":
        cat = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(cat)
    elif kind == "deep":
        cat.write_text("entries: " + "[" * 5000 + "]" * 5000 + "\n")
    elif kind == "scalar":
        cat.write_text("entries:\n  - name: !!int x\n")
    out = cli(
        "matrix", str(recipe), "--out", str(tmp_path / "run"), env={"VLLMDIAG_CATALOGUE": str(cat)}
    )
    assert "$VLLMDIAG_CATALOGUE names a catalogue that does not load" in out
    assert not (tmp_path / "run").exists()
    # and triage names it the same way, as --catalogue or through the variable
    out = cli("triage", str(RECIPE), "--catalogue", str(cat))
    assert str(cat) in out


def test_a_big_catalogue_is_refused_at_once(tmp_path: Path) -> None:
    cat = tmp_path / "big.yaml"
    with cat.open("w") as f:
        f.write("entries:\n")
        line = "  - {name: n, pattern: p, meaning: m, next_step: s}\n"
        f.write(line * (17 * 1024 * 1024 // len(line) + 1))
    out = cli("triage", str(RECIPE), "--catalogue", str(cat))
    assert "the catalogue is larger than 16 MiB" in out
