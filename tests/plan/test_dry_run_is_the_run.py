"""``--dry-run`` prints the command the run executes, byte for byte: for a uv leg, a
``path:`` leg (its real interpreter and Python version, never the venv directory or the
version vllmdiag itself runs) and a leg whose older vLLM spells the random dataset's
lengths the old way. Each case runs the cell for real and compares the dry-run's line and
``--json`` argv with what the cell's log header and ``result.json`` recorded."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from vllmdiag.cli.app import app
from vllmdiag.plan.command import UNBUILT_PYTHON, UNKNOWN_PYTHON

RUNNER = CliRunner()
SECRET = "sk-dry-run-secret-1234"
#: An interpreter other than the one running the tests, where the machine has one.
OTHER_PYTHON = next(
    (p for p in ("/usr/bin/python3.11", "/usr/bin/python3") if Path(p).exists()), sys.executable
)


def _venv(where: Path, base: str = OTHER_PYTHON) -> Path:
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return where


def _version_of(python: Path) -> str:
    done = subprocess.run(
        [str(python), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def _recipe(tmp_path: Path, leg: str, workload: str, env: str = "") -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: dry
        question: is the dry-run the run?
        legs:
          the-leg: {leg}
        baseline:
          leg: the-leg
          env: {{NOTE: "a b; $(touch pwned)", HF_TOKEN: "{SECRET}"{env}}}
        workloads:
          w: {workload}
        """)
    )
    return path


ECHO = (
    '{command: ["{python}", "-c", "import sys; print(sys.argv[1:])", "--out", "{out_dir}", '
    '"--api-key", "' + SECRET + '", "{flags}"]}'
)


def _dry(path: Path, run: Path) -> tuple[str, dict[str, Any]]:
    text = RUNNER.invoke(app, ["matrix", str(path), "--dry-run", "--out", str(run)])
    assert text.exit_code == 0, text.output
    as_json = RUNNER.invoke(app, ["matrix", str(path), "--dry-run", "--out", str(run), "--json"])
    assert as_json.exit_code == 0, as_json.output
    return text.output, json.loads(as_json.stdout)


def _line(output: str, cell: str) -> str:
    lines = output.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith(cell + " "))
    assert lines[at + 1].startswith("  $ ")
    return lines[at + 1][len("  $ ") :]


def _ran(run: Path, cell: str) -> tuple[str, list[str]]:
    """The command the cell's log header records, and result.json's argv."""
    header = (run / "cells" / cell / "log.txt").read_text().splitlines()[1]
    assert header.startswith("$ ")
    return header[2:], json.loads((run / "cells" / cell / "result.json").read_text())["argv"]


def _compare(output: str, plan: dict[str, Any], run: Path, cell: str) -> list[str]:
    command, argv = _ran(run, cell)
    line = _line(output, cell)
    shown = next(c for c in plan["cells"] if c["id"] == cell)
    assert line == shown["line"]
    assert line == f"NOTE='a b; $(touch pwned)' HF_TOKEN='***' {command}"  # byte for byte
    assert shown["argv"] == argv
    assert shlex.split(command) == argv
    assert SECRET not in output and SECRET not in json.dumps(plan)
    return argv


def _run(path: Path, run: Path) -> None:
    done = RUNNER.invoke(app, ["matrix", str(path), "--out", str(run)])
    assert (run / "cells").is_dir(), done.output


def test_a_path_leg_shows_its_real_interpreter_and_python_version(tmp_path: Path) -> None:
    venv = _venv(tmp_path / "venv")
    path = _recipe(tmp_path, f"{{path: {venv}}}", ECHO)
    run = tmp_path / "run"
    output, plan = _dry(path, run)
    leg = plan["legs"][0]
    assert leg["interpreter"] == str(venv / "bin" / "python")  # not the venv directory
    assert leg["python"] == _version_of(venv / "bin" / "python")  # its own, X.Y.Z
    _run(path, run)
    argv = _compare(output, plan, run, "r1.baseline.w")
    assert argv[0] == str(venv / "bin" / "python")
    assert argv[argv.index("--out") + 1] == str(run / "cells/r1.baseline.w/out")
    assert plan["cells"][0]["unknown"] == []
    # pasted into a shell, the line runs that command and nothing else
    done = subprocess.run(
        ["bash", "-c", _line(output, "r1.baseline.w")], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0 and "--api-key" in done.stdout, done.stderr
    assert not (tmp_path / "pwned").exists()


def _old_vllm(venv: Path) -> None:
    """A vLLM whose benchmarks spell the random dataset's lengths ``--input-len`` (the
    source is what the leg is asked; importing it would fail) and whose ``vllm`` command
    only echoes what it was given."""
    site = next((venv / "lib").glob("python3*/site-packages"))
    bench = site / "vllm" / "benchmarks"
    bench.mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("raise RuntimeError('not importable')\n")
    (bench / "datasets.py").write_text('parser.add_argument("--input-len", type=int)\n')
    script = venv / "bin" / "vllm"
    script.write_text('#!/bin/sh\necho "vllm $*"\nexit 3\n')
    script.chmod(0o755)


def test_an_older_vllm_gets_the_spelling_it_takes_in_the_dry_run_as_in_the_run(
    tmp_path: Path,
) -> None:
    venv = _venv(tmp_path / "venv")
    _old_vllm(venv)
    workload = "{builtin: vllm-throughput, model: m, input_len: 64, output_len: 8}"
    path = _recipe(tmp_path, f"{{path: {venv}}}", workload)
    run = tmp_path / "run"
    output, plan = _dry(path, run)
    _run(path, run)
    argv = _compare(output, plan, run, "r1.baseline.w")
    assert argv[argv.index("--input-len") + 1] == "64"
    assert "--random-input-len" not in argv
    log = (run / "cells/r1.baseline.w/log.txt").read_text()
    assert "vllm bench throughput --model m --dataset-name random --input-len 64" in log
    # the same leg with a current vLLM on the cell's PYTHONPATH takes the current spelling
    new = tmp_path / "new"
    (new / "vllm" / "benchmarks").mkdir(parents=True)
    (new / "vllm" / "__init__.py").write_text("")
    (new / "vllm" / "benchmarks" / "datasets.py").write_text('add("--random-input-len")\n')
    path = _recipe(tmp_path, f"{{path: {venv}}}", workload, env=f', PYTHONPATH: "{new}"')
    run2 = tmp_path / "run2"
    output, plan = _dry(path, run2)
    assert "--random-input-len" in plan["cells"][0]["argv"]
    _run(path, run2)
    command, argv = _ran(run2, "r1.baseline.w")
    assert plan["cells"][0]["argv"] == argv
    assert _line(output, "r1.baseline.w").endswith(" " + command)


@pytest.mark.network
def test_a_uv_leg_says_its_interpreter_is_not_known_until_built_then_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLMDIAG_CACHE", str(tmp_path / "cache"))  # the leg is not built
    path = _recipe(tmp_path, "{requirements: [packaging==21.3]}", ECHO)
    before = RUNNER.invoke(app, ["matrix", str(path), "--dry-run", "--json"])
    planned = json.loads(before.stdout)
    cell = planned["cells"][0]
    assert cell["argv"][0] == UNBUILT_PYTHON and cell["unknown"] == [UNKNOWN_PYTHON]
    assert planned["legs"][0]["interpreter"] == UNBUILT_PYTHON
    text = RUNNER.invoke(app, ["matrix", str(path), "--dry-run"]).output
    assert f"  $ NOTE='a b; $(touch pwned)' HF_TOKEN='***' '{UNBUILT_PYTHON}' -c" in text
    assert "not known yet: " + UNKNOWN_PYTHON in text
    _run(path, tmp_path / "first")  # builds the leg
    run = tmp_path / "run"
    output, plan = _dry(path, run)
    assert plan["cells"][0]["unknown"] == []
    _run(path, run)
    argv = _compare(output, plan, run, "r1.baseline.w")
    record = json.loads(next((run / "envs").glob("*.json")).read_text())
    assert argv[0] == record["python"] == plan["legs"][0]["interpreter"]
    assert plan["legs"][0]["python"] == _version_of(Path(argv[0]))


def test_a_study_dry_run_is_what_its_batch_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.jobs.study.test_run import recipe as study_recipe

    monkeypatch.chdir(tmp_path)
    venv = _venv(tmp_path / "venv", sys.executable)
    path = study_recipe(tmp_path / "study", uv_leg=False)
    path.write_text(path.read_text().replace(f"{{path: {sys.executable}}}", f"{{path: {venv}}}"))
    dry = RUNNER.invoke(app, ["study", str(path), "--dry-run", "--model", "alpha", "--json"])
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.stdout)
    assert plan["legs"][0]["interpreter"] == str(venv / "bin" / "python")
    assert plan["legs"][0]["python"] == _version_of(venv / "bin" / "python")
    text = RUNNER.invoke(app, ["study", str(path), "--dry-run", "--model", "alpha"]).output
    ran = RUNNER.invoke(app, ["study", str(path), "--model", "alpha", "--json"])
    assert ran.exit_code == 0, ran.output
    batch = Path(json.loads(ran.stdout)["batch_dir"]).resolve()  # the run uses it so
    assert len(plan["cells"]) == 2
    for cell in plan["cells"]:
        command, argv = _ran(batch, cell["id"])
        assert [a.replace("<run>", str(batch)) for a in cell["argv"]] == argv
        line = _line(text, cell["id"])
        assert line == cell["line"] and line.startswith("STUDY_HARNESS=1 ")
        assert [w.replace("<run>", str(batch)) for w in shlex.split(line)] == [
            "STUDY_HARNESS=1",
            *shlex.split(command),
        ]


def test_a_control_character_in_the_command_is_escaped_alike_in_the_dry_run_and_the_log(
    tmp_path: Path,
) -> None:
    venv = _venv(tmp_path / "venv", sys.executable)
    workload = (
        '{command: ["{python}", "-c", "import sys; print(ascii(sys.argv[1]))", "a\\e[2Jb\\nc"]}'
    )
    path = _recipe(tmp_path, f"{{path: {venv}}}", workload)
    run = tmp_path / "run"
    output, plan = _dry(path, run)
    assert plan["cells"][0]["argv"][-1] == "a\x1b[2Jb\nc"  # --json keeps the value
    _run(path, run)
    log = (run / "cells/r1.baseline.w/log.txt").read_text().splitlines()
    assert log[1].endswith(" $'a\\x1b[2Jb\\nc'") and "\x1b" not in log[1]
    assert log[2] == ascii("a\x1b[2Jb\nc")  # the next line is already the command's output
    assert _line(output, "r1.baseline.w") == (
        f"NOTE='a b; $(touch pwned)' HF_TOKEN='***' {log[1][2:]}"
    )
    done = subprocess.run(["bash", "-c", log[1][2:]], capture_output=True, text=True)
    assert done.stdout.strip() == log[2]  # pasted, bash passes the same argument
