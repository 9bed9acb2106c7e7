"""What vllmdiag prints or writes for people is safe: a dry-run pastes without running
anything it should not, and terminal escapes from a recipe or a log are shown as escapes,
never sent raw (to the terminal or into summary.md)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from tests.support.recipes import write_recipe
from vllmdiag.cli.app import app
from vllmdiag.plan.command import assignment, shell_word

RUNNER = CliRunner()
ESCAPES = ("\x1b[2J", "\x1b]0;pwned\x07", "\u202e")


def _recipe(tmp_path: Path, env: str, question: str = "q") -> Path:
    body = f"""\
    baseline: {{leg: here, env: {env}}}
    workloads:
      w: {{command: "{{python}} {{recipe_dir}}/w.py"}}
    """
    return write_recipe(tmp_path, body, question=f'"{question}"')


def test_an_env_name_a_shell_cannot_assign_is_refused_at_load(tmp_path: Path) -> None:
    path = _recipe(tmp_path, '{"X;touch /tmp/pwned;Y": "1"}')
    result = RUNNER.invoke(app, ["matrix", str(path), "--dry-run"])
    assert result.exit_code == 1
    assert f"{path}:5:" in result.output and "is not a variable name" in result.output
    assert "Traceback" not in result.output


def test_every_printed_env_line_pastes_as_assignments() -> None:
    for name, value in [("A", "x; touch /tmp/pwned"), ("X;touch /tmp/p;Y", "1"), ("B", "$(id)")]:
        words = shlex.split(assignment(name, value))
        assert words == [f"{name}={value}"]  # one word: nothing else a shell would run


def test_a_word_with_control_characters_is_one_escaped_word_bash_reads_back() -> None:
    for value in ["a\x1b[2Jb", "line\nnext; touch pwned", "it's \\ \u202e\x07", "\x00\x7f"]:
        word = shell_word(value)
        assert word.isprintable() and "\n" not in word
        if "\x00" in value:
            continue  # no argv can hold a NUL (recipes refuse it at load)
        done = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True)
        assert done.stdout.decode() == value


def test_dry_run_pasted_into_a_shell_runs_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_text("import os\nprint(os.environ['GREETING'])\nprint('ok')\n")
    path = _recipe(tmp_path, '{GREETING: "a; touch pwned; $(touch pwned2)"}')
    result = RUNNER.invoke(app, ["matrix", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert not any(ln.startswith("  env: ") for ln in lines)  # one line per cell
    command = next(ln for ln in lines if ln.startswith("  $ "))[len("  $ ") :]
    assert command.startswith("GREETING='a; touch pwned; $(touch pwned2)' ")
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == ["a; touch pwned; $(touch pwned2)", "ok"], done.stderr
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


def test_terminal_escapes_are_shown_as_escapes(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_text(
        "import sys\nraise RuntimeError('boom \\x1b[2J\\x1b]0;pwned\\x07 done')\n"
    )
    path = _recipe(tmp_path, '{NOTE: "v\\e[31mred"}', question="why \\e[2J\\u202e?")
    dry = RUNNER.invoke(app, ["matrix", str(path), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert not any(e in dry.output for e in ESCAPES) and "\x1b" not in dry.output
    assert "why \\x1b[2J\\u202e?" in dry.output and "\\x1b[31mred" in dry.output
    run = tmp_path / "run"
    result = RUNNER.invoke(app, ["matrix", str(path), "--out", str(run)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output
    summary = (run / "summary.md").read_text()
    assert "\x1b" not in summary and "\u202e" not in summary
    assert "why \\x1b[2J\\u202e?" in summary
    assert "RuntimeError: boom" in summary  # the root cause, read from the log
    triage = RUNNER.invoke(app, ["triage", str(run / "cells" / "r1.baseline.w" / "log.txt")])
    assert triage.exit_code == 0 and "\x1b" not in triage.output
    assert "RuntimeError: boom" in triage.output


def test_the_live_status_line_shows_a_logs_escapes_as_escapes(tmp_path: Path) -> None:
    from vllmdiag.cli.live import last_line

    log = tmp_path / "log.txt"
    log.write_text("loading\n\x1b]0;pwned\x07\x1b[2J weights 3/4\n")
    assert last_line(log) == "\\x1b]0;pwned\\x07\\x1b[2J weights 3/4"


def test_a_kernel_name_with_escapes_is_shown_as_escapes(tmp_path: Path) -> None:
    import gzip
    import json
    import shutil
    from collections import Counter

    h200 = FIXTURES / "traces" / "h200"
    side = tmp_path / "eager"
    shutil.copytree(h200 / "eager", side)
    trace = json.loads(gzip.decompress((side / "trace.json.gz").read_bytes()))
    events = trace["traceEvents"]
    spent: Counter[str] = Counter()
    for ev in events:
        if ev.get("cat") == "kernel":
            spent[ev["name"]] += ev.get("dur", 0)
    top = spent.most_common(1)[0][0]
    for ev in events:
        if ev.get("name") == top:
            ev["name"] = "evil\x1b]0;pwned\x07\x1b[2J\u202ekernel"
    (side / "trace.json.gz").write_bytes(gzip.compress(json.dumps(trace).encode()))
    out = tmp_path / "diff"
    result = RUNNER.invoke(
        app, ["profile", "diff", str(side), str(h200 / "sdpa"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    summary = (out / "summary.md").read_text()
    assert "evil\\x1b]0;pwned" in summary, summary[:2000]
    assert "evil\\x1b]0;pwned" in result.output  # the terminal shows it, escaped
    for shown in (summary, result.output):
        assert "\x1b" not in shown and "\u202e" not in shown
