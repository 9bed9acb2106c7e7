"""What a newcomer meets first: help that reads like a command-line tool's, commands that
can be pasted, --json errors as JSON, text from logs printed as text, one lock per
machine."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tests.support.recipes import write_recipe
from vllmdiag.cli.app import app
from vllmdiag.services.locks import file_lock
from vllmdiag.services.paths import node_lock_path

RUNNER = CliRunner()
MAIN = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()"]


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out = [(path, cmd)]
    for name, sub in getattr(cmd, "commands", {}).items():
        out += _commands(sub, (*path, name))
    return out


def test_help_names_values_like_a_command_line_tool() -> None:
    root = typer.main.get_command(app)
    for path, cmd in _commands(root):
        result = RUNNER.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        for token in ("<bool>", "<list[", "<path>", "<str>", "<float>", "<int"):
            assert token not in result.output, (path, token)
        if path[:1] == ("profile",):
            continue  # the profile commands document their own options
        for param in getattr(cmd, "params", []):
            assert getattr(param, "help", None), (path, param.name)
    text = RUNNER.invoke(app, ["matrix", "--help"], env={"COLUMNS": "200"}).output
    for option in ("--out DIR", "--runs-root DIR", "--grace SECONDS", "--resume DIR", "--wait"):
        name, _, metavar = option.partition(" ")
        line = next(ln for ln in text.splitlines() if f" {name} " in ln)
        assert metavar in line, line


def test_an_unknown_family_is_an_error() -> None:
    result = RUNNER.invoke(app, ["arms", "list", "--family", "pin"])
    assert result.exit_code == 1
    assert "no arm family 'pin'" in result.output and "did you mean 'pins'?" in result.output
    ok = RUNNER.invoke(app, ["arms", "list", "--family", "pins", "--json"])
    assert {a["family"] for a in json.loads(ok.stdout)["arms"]} == {"pins"}


def test_a_check_that_did_not_run_is_not_ok() -> None:
    result = RUNNER.invoke(app, ["doctor", sys.executable, "--no-gpu", "--json"])
    assert result.exit_code == 0, result.output
    findings = {f["code"]: f["severity"] for f in json.loads(result.stdout)["findings"]}
    assert findings["gpu-processes"] == "skipped"
    table = RUNNER.invoke(app, ["doctor", sys.executable, "--no-gpu"], env={"COLUMNS": "200"})
    line = next(ln for ln in table.output.splitlines() if "gpu-processes" in ln)
    assert "skipped" in line and " ok " not in line


@pytest.mark.parametrize(
    "args",
    [
        ["matrix", "missing.yaml"],
        ["arms", "show", "nope"],
        ["leg", "show", "missing.yaml"],
        ["doctor", "/nonexistent/venv"],
        ["fingerprint", "/nonexistent.log"],
        ["triage", "/nonexistent.log"],
    ],
)
def test_json_errors_are_json(args: list[str]) -> None:
    result = RUNNER.invoke(app, [*args, "--json"])
    assert result.exit_code == 1, result.output
    error = json.loads(result.stdout)
    assert set(error) == {"error", "where", "hint"} and error["error"]
    assert "error: " in result.stderr


def test_usage_errors_with_json_are_json_too() -> None:
    done = subprocess.run([*MAIN, "arms", "list", "--bogus", "--json"], capture_output=True)
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"] == "No such option: --bogus"
    assert b"Traceback" not in done.stderr


def test_commands_are_printed_so_they_can_be_pasted(tmp_path: Path) -> None:
    path = write_recipe(
        tmp_path,
        """\
        baseline:
          leg: here
          env: {GREETING: "hello world"}
          flags: [{name: --note, value: "it's a 'quoted' $HOME"}]
        workloads:
          w: {command: ["{python}", "-c", "import sys; print(sys.argv[1:])", "{flags}"]}
        """,
    )
    plan = json.loads(RUNNER.invoke(app, ["matrix", str(path), "--dry-run", "--json"]).stdout)
    argv = plan["cells"][0]["argv"]
    text = RUNNER.invoke(app, ["matrix", str(path), "--dry-run"], env={"COLUMNS": "40"}).output
    lines = text.splitlines()
    command = next(ln for ln in lines if ln.startswith("  $ "))
    assert command.startswith("  $ GREETING='hello world' ")  # the overlay, then the command
    assert shlex.split(command[4:]) == ["GREETING=hello world", *argv]  # one line, quoted
    assert plan["cells"][0]["env"] == {"GREETING": "hello world"}
    run = tmp_path / "run"
    assert RUNNER.invoke(app, ["matrix", str(path), "--out", str(run)]).exit_code == 0
    log = (run / "cells/r1.baseline.w/log.txt").read_text().splitlines()
    real = [a.replace("<run>", str(run)) for a in argv]
    assert log[0].startswith("# vllmdiag: cell started ")
    assert log[1] == "$ " + shlex.join(real)
    done = subprocess.run(shlex.split(log[1][2:]), capture_output=True, text=True)
    assert done.stdout.strip() == log[2]  # pasted, it does what the cell did


MARKUP = ["[/data/models/qwen]", "[bold]", "[cu13]"]


def test_log_text_and_names_with_brackets_print_literally_and_resume(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text(
        "import sys\n"
        "print('loading [/data/models/qwen] [bold] [cu13]', flush=True)\n"
        "raise RuntimeError('no weights at [/data/models/qwen] for [bold] [cu13]')\n"
    )
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: t
        question: "why does [bold] [/data/models/qwen] die on [cu13]?"
        legs:
          here: {{path: {sys.executable}}}
        baseline: {{leg: here}}
        workloads:
          w:
            model: "[/data/models/qwen]"
            command: ["{{python}}", "{{recipe_dir}}/crash.py", "{{model}}"]
        arms:
          - name: tag
            env: {{TAG: "[cu13] [bold]"}}
            hypothesis: "the [bold] tag [/data/models/qwen] matters"
        """)
    )
    run = tmp_path / "run"
    env = {"COLUMNS": "300"}
    first = RUNNER.invoke(app, ["matrix", str(path), "--out", str(run)], env=env)
    assert first.exit_code == 0, first.output
    for text in MARKUP:
        assert text in first.output
    assert "RuntimeError: no weights at [/data/models/qwen] for [bold] [cu13]" in first.output
    dry = RUNNER.invoke(app, ["matrix", str(path), "--dry-run"], env=env)
    assert dry.exit_code == 0 and "$ TAG='[cu13] [bold]' " in dry.output
    shown = RUNNER.invoke(app, ["arms", "show", "enforce-eager"], env=env)
    assert shown.exit_code == 0

    (run / "cells/r1.tag.w/result.json").unlink()
    again = RUNNER.invoke(app, ["matrix", str(path), "--resume", str(run)], env=env)
    assert again.exit_code == 0, again.output
    assert "r1.baseline.w: fail" in again.output and "(reused)" in again.output
    assert "RuntimeError: no weights at [/data/models/qwen] for [bold] [cu13]" in again.output
    report = RUNNER.invoke(app, ["fingerprint", str(run / "cells/r1.tag.w/log.txt")], env=env)
    assert report.exit_code == 0 and "r1.tag.w" in report.output


def test_the_node_lock_is_one_per_machine_whatever_the_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLLMDIAG_LOCK")
    seen = set()
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from vllmdiag.services.paths import node_lock_path as p; print(p())",
            ],
            env={**os.environ, "TMPDIR": str(tmp_path / name)},
            capture_output=True,
            text=True,
            check=True,
        )
        seen.add(done.stdout.strip())
    assert seen == {"/tmp/vllmdiag-node.lock"}


def test_wait_queues_behind_the_node_lock(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, 'baseline: {leg: here}\nworkloads:\n  w: {command: ["true"]}\n')
    run = tmp_path / "run"
    err = tmp_path / "stderr.txt"
    with file_lock(node_lock_path()):
        refused = subprocess.run(
            [*MAIN, "matrix", str(path), "--out", str(run)], capture_output=True
        )
        assert refused.returncode == 1 and b"--wait" in refused.stderr
        with open(err, "wb") as fh:
            queued = subprocess.Popen(
                [*MAIN, "matrix", str(path), "--out", str(run), "--wait"], stdout=fh, stderr=fh
            )
        deadline = time.monotonic() + 60
        while b"waiting for the node lock" not in err.read_bytes():
            assert time.monotonic() < deadline and queued.poll() is None, err.read_text()
            time.sleep(0.1)
        time.sleep(0.5)
        assert queued.poll() is None and not (run / "run.jsonl").exists()
    assert queued.wait(timeout=120) == 0, err.read_text()
    assert (run / "verdict.json").exists()
