"""Stopping a run whose cells run side by side: SIGTERM ends every running cell's whole
tree (a child that ignores TERM, a grandchild that left the session), journals each
interruption once, and a resume finishes the run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.support import observe
from tests.support.recipes import start_matrix, tree_recipe

CLI = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()", "matrix"]


def test_sigterm_ends_every_running_cell_then_resume_finishes(tmp_path: Path) -> None:
    path = tree_recipe(tmp_path, name="stop2", question="does a stop end every running cell?")
    run_dir = tmp_path / "run"
    runner = start_matrix(path, run_dir, "--gpus", "2", "--json")
    pids = observe.pids_when_up(run_dir, "r1.baseline.w1") + observe.pids_when_up(
        run_dir, "r1.eager.w1"
    )
    runner.send_signal(signal.SIGTERM)
    stdout, stderr = runner.communicate(timeout=60)
    assert runner.returncode == 128 + signal.SIGTERM, stderr.decode()
    assert not [p for p in pids if observe.running(p)], "a cell's tree outlived the stop"
    events = [json.loads(x) for x in (run_dir / "run.jsonl").read_text().splitlines()]
    interrupted = sorted(e["id"] for e in events if e["event"] == "cell_interrupted")
    assert interrupted == ["r1.baseline.w1", "r1.eager.w1"]
    assert events[-1]["event"] == "run_finished" and events[-1]["status"] == "interrupted"
    report = json.loads(stdout)
    assert {c["outcome"] for c in report["cells"]} == {"skipped"}

    (tmp_path / "quick").write_text("")
    resumed = subprocess.run(
        [*CLI, str(path), "--resume", str(run_dir), "--gpus", "2", "--json"],
        capture_output=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert {c["outcome"] for c in json.loads(resumed.stdout)["cells"]} == {"pass"}
