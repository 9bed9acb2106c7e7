"""Every value a run knows to be secret is masked wherever it reappears: the values of
secret-looking flags (on the arm line, in the manifest, the dry-run and the report) and,
when the workload echoes its argv and environment into its failure, in the root cause,
the journal, summary.md, ``matrix --json``, and in what later processes read back from
the run (``triage`` of the cell log, text and --json, and the report draft)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from tests.support.recipes import write_recipe
from vllmdiag.cli.app import app
from vllmdiag.services import redact

API_KEY = "sk-echo-0123456789abcdef"
HF = "hfecho0123456789xyz"
TOKEN = "tok-echo-987654321"
PASSWORD = "pw-echo-55555555"
WANDB = "wandb-echo-1234567890"
PG = "pgpass-echo-24680"
SECRETS = (API_KEY, HF, TOKEN, PASSWORD, WANDB, PG)

ECHO = """\
import os, sys
argv = " ".join(sys.argv[1:])
env = f"wandb={os.environ['WANDB_API_KEY']} pw={os.environ['PGPASSWORD']}"
print("started with", argv, env, flush=True)
raise RuntimeError(f"engine refused {argv} {env}")
"""


def _recipe(tmp_path: Path) -> Path:
    body = f"""\
    baseline:
      leg: here
      env: {{WANDB_API_KEY: "{WANDB}", PGPASSWORD: "{PG}"}}
    workloads:
      w: {{command: "{{python}} {{recipe_dir}}/echo.py --hf-token {HF} {{flags}}"}}
    arms:
      - {{name: keyed, flag: "--api-key {API_KEY}"}}
      - {{name: tok, flag: "--token={TOKEN}"}}
      - {{name: pw, flag: ["--password {PASSWORD}", --enforce-eager], compound: true}}
    """
    return write_recipe(
        tmp_path, body, name="echo", question="does a key leak?", scripts={"echo.py": ECHO}
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """vllmdiag in a process of its own: it knows only what the run directory keeps."""
    cmd = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def _clean(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} in {where}"


def test_echoed_flag_and_env_secrets_are_masked_everywhere(tmp_path: Path) -> None:
    path = _recipe(tmp_path)
    run = tmp_path / "run"
    runner = CliRunner()
    for args in (["--dry-run"], ["--dry-run", "--json"], ["--out", str(run), "--json"]):
        result = runner.invoke(app, ["matrix", str(path), *args])
        assert result.exit_code in (0, 1), result.output
        _clean(f"matrix {' '.join(args)}", result.output)
    assert "--api-key ***" in (run / "summary.md").read_text()  # the arm line
    written = [f for f in run.rglob("*") if f.is_file() and "out" not in f.parts]
    assert {f.name for f in written} >= {"run.jsonl", "manifest.json", "summary.md", "result.json"}
    for file in written:
        if file.name != "log.txt":  # the cell's own output, as it wrote it
            _clean(str(file), file.read_text(errors="replace"))
    log = run / "cells" / "r1.keyed.w" / "log.txt"
    assert "engine refused" in log.read_text()  # the log itself keeps what the cell printed
    assert "secrets.sha256" in {f.name for f in written}
    kept = (run / "secrets.sha256").read_text()
    _clean("secrets.sha256", kept)
    assert hashlib.sha256(API_KEY.encode()).hexdigest() not in kept  # salted, per run
    assert len({line.split(":")[1] for line in kept.splitlines()}) == 1  # one salt

    redact.forget_all()  # what follows reads the run back in processes of their own
    for args in (["triage", str(log)], ["triage", str(log), "--json"], ["report", str(run)]):
        done = _cli(*args)
        assert done.returncode == 0, done.stderr
        assert "engine refused" in done.stdout
        _clean(" ".join(args[:1] + args[2:]), done.stdout + done.stderr)
        assert "***" in done.stdout


def test_masking_values_never_the_code_around_them() -> None:
    code = "token={os.environ.get('HF_TOKEN')} url=$HF_TOKEN"
    assert redact.text(code) == code
    assert redact.text("--env takes KEY=VALUE") == "--env takes KEY=VALUE"
    assert redact.text("HF_TOKEN=hf_abcdefgh123") == "HF_TOKEN=***"
    assert redact.flag_secrets(["--api-key", "k-12345678", "--max-num-batched-tokens", "8"]) == [
        "k-12345678"
    ]


def test_a_usage_line_holding_no_secret_is_not_masked(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["doctor", str(tmp_path), "--env", "NOEQUALS"])
    assert result.exit_code == 1
    assert "--env takes KEY=VALUE, not 'NOEQUALS'" in result.output, result.output
    assert "***" not in result.output
