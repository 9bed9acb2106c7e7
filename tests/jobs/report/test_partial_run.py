"""A report drafted from an interrupted run claims no more than ran: arms that never ran
are named as not run, and compound arms are never called single-variable changes; the
paths it names are relative to the recipe or the run."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

WORKLOAD = """\
import os, sys, time
out, args = sys.argv[1], sys.argv[2:]
if "--hold" in args:
    open(os.path.join(out, "held"), "w").write(str(os.getpid()))
    time.sleep(600)
if "--fixit" not in args:
    raise RuntimeError("engine broke without the fix")
print("ok")
"""


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from vllmdiag.cli.app import main; main()", *args]


def test_a_report_of_an_interrupted_run_of_compound_arms_says_what_ran(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_text(WORKLOAD)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        textwrap.dedent(
            f"""\
            name: partial
            question: which change fixes it?
            legs:
              here: {{path: {sys.executable}}}
            baseline: {{leg: here}}
            workloads:
              w: {{command: "{{python}} {{recipe_dir}}/w.py {{out_dir}} {{flags}}"}}
            arms:
              - {{name: fix, flag: [--fixit, --enforce-eager], compound: true}}
              - {{name: slow1, flag: [--hold, --x1], compound: true}}
              - {{name: slow2, flag: [--hold, --x2], compound: true}}
            timeout: 300
            """
        )
    )
    run = tmp_path / "run"
    runner = subprocess.Popen(
        _cli("matrix", str(recipe), "--out", str(run), "--grace", "1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not (
        (run / "cells" / "r1.fix.w" / "result.json").exists() and list(run.glob("cells/*/out/held"))
    ):
        assert time.monotonic() < deadline and runner.poll() is None, "the run never got there"
        time.sleep(0.1)
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=60) == 128 + signal.SIGTERM
    done = subprocess.run(_cli("report", str(run)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert "single-variable change" not in report, report
    assert "Of 1 compound change that ran, `flag --fixit; flag --enforce-eager` is sufficient" in (
        report
    )
    assert "compound arm: not a single-variable result" in report
    assert "Not run (the run was interrupted): `slow1`, `slow2`" in report
    # a report for sharing names paths relative to the recipe or the run, not where they lay
    assert str(tmp_path) not in report, report
    assert 'File "w.py", line 7' in report
