"""How a user hands triage a log: a path, a paste on standard input, a gzip'd file, a run
directory; and how the answer is printed (log text is data, never Rich markup)."""

from __future__ import annotations

import gzip
import json
import shlex
import sys
from pathlib import Path

from typer.testing import CliRunner

from tests.support.paths import FIXTURES, REPO
from vllmdiag.cli.app import app
from vllmdiag.readers.triage import attribute, triage_file
from vllmdiag.services import proc
from vllmdiag.spine.rundir import recorded_outcome

LOGS = FIXTURES / "logs"
THRMMA = LOGS / "b200_018_whisper_thrmma.log"


def _shell(cmd: str) -> proc.Completed:
    """Run the real console entry point through a shell (pipes and redirections)."""
    cli = f"{shlex.quote(sys.executable)} -c 'from vllmdiag.cli.app import main; main()'"
    env = {"PYTHONPATH": str(REPO)}
    return proc.run(
        ["sh", "-c", cmd.replace("VLLMDIAG", cli)], env=env, cwd=REPO, capture=True, timeout=120
    )


def test_a_paste_on_standard_input() -> None:
    paste = LOGS / "field" / "vllm_41027_exception_line_no_header.log"
    done = _shell(f"cat {shlex.quote(str(paste))} | VLLMDIAG triage - --json")
    assert done.ok, done.stderr
    rc = json.loads(done.stdout)["root_cause"]
    assert (rc["type"], rc["process"], rc["evidence"]) == (
        "RuntimeError",
        "Worker_TP2 pid=100746",
        "exception-line",
    )
    assert rc["message"].endswith("hyperconnection.hpp:56): Unsupported architecture")


def test_gzip_logs_are_read_as_text(tmp_path: Path) -> None:
    gz = tmp_path / "run.log.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write(THRMMA.read_bytes())
    t = triage_file(gz)
    assert t.root_cause is not None and t.root_cause.known == "cutlass-thrmma-relocation"
    assert t.lines == THRMMA.read_bytes().count(b"\n")
    done = _shell(f"VLLMDIAG triage - --json < {shlex.quote(str(gz))}")
    assert done.ok, done.stderr
    assert json.loads(done.stdout)["root_cause"]["known"] == "cutlass-thrmma-relocation"
    # concatenated gzip members (logrotate appends) are read as one text
    two = tmp_path / "two.log.gz"
    two.write_bytes(gzip.compress(b"INFO starting\n") + gzip.compress(THRMMA.read_bytes()))
    again = triage_file(two)
    assert again.root_cause is not None and again.root_cause.known == "cutlass-thrmma-relocation"


def test_a_broken_gzip_and_a_second_stdin_are_user_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + b"not deflate at all" * 10)
    done = _shell(f"VLLMDIAG triage {shlex.quote(str(bad))}")
    assert done.rc == 1
    assert "does not decompress" in done.stderr and "Traceback" not in done.stderr
    done = _shell("echo x | VLLMDIAG triage - -")
    assert done.rc == 1 and "standard input (-) can be read once" in done.stderr


def test_log_text_is_printed_as_written_never_as_markup(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["triage", str(LOGS / "h200_026_no_ctk_flavor.log")])
    assert res.exit_code == 0, res.output
    assert "pip install 'nvidia-cutlass-dsl[cu13]'" in res.output
    log = tmp_path / "qwen.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/srv/run.py", line 3, in <module>\n'
        "FileNotFoundError: [Errno 2] No such file: '[/data/models/qwen]' [bold]x\n"
    )
    res = runner.invoke(app, ["triage", str(log)], terminal_width=400)
    assert res.exit_code == 0, res.output
    assert "No such file: '[/data/models/qwen]' [bold]x" in res.output
    res = runner.invoke(app, ["triage", str(tmp_path)], terminal_width=400)  # the table
    assert res.exit_code == 0, res.output
    assert "[Errno <n>]" in res.output and "'[<path>]' [bold]x" in res.output
    (tmp_path / "noise.log").write_text("[/data/models/qwen] loaded [red]\n")
    res = runner.invoke(app, ["triage", str(tmp_path)], terminal_width=400)
    assert res.exit_code == 0 and "'[/data/models/qwen] loaded [red]'" in res.output


def _cell(run: Path, cell: str, outcome: str, log: bytes) -> None:
    d = run / "cells" / cell
    d.mkdir(parents=True)
    (d / "log.txt").write_bytes(log)
    (d / "result.json").write_text(json.dumps({"id": cell, "outcome": outcome}))


def test_a_passed_cell_is_reported_as_passed(tmp_path: Path) -> None:
    quiet = (LOGS / "silent_stop.log").read_bytes()  # no traceback, no death line
    _cell(tmp_path, "ok", "pass", quiet)
    _cell(tmp_path, "broken", "fail", THRMMA.read_bytes())
    _cell(tmp_path, "unknown", "fail", quiet)
    assert attribute([tmp_path]).passed == ()  # the logs alone
    att = attribute([tmp_path], recorded=recorded_outcome)  # and what the run recorded
    assert att.passed == ("ok",)
    assert [g.members for g in att.groups] == [("broken",)]
    assert [u.member for u in att.unattributed] == ["unknown"]
    res = CliRunner().invoke(app, ["triage", str(tmp_path)], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "passed ok" in res.output and "no root cause ok" not in res.output
    assert "killed by a signal" not in res.output
    res = CliRunner().invoke(app, ["triage", str(tmp_path / "cells" / "ok" / "log.txt")])
    assert "passed: the run recorded this cell as passed" in res.output
    data = json.loads(CliRunner().invoke(app, ["triage", str(tmp_path), "--json"]).stdout)
    assert data["passed"] == ["ok"]
