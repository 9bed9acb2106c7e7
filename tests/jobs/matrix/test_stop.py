"""Stopping a matrix from outside: SIGTERM and SIGHUP behave as Ctrl-C (the cell's whole
tree ended, the stop journaled, a non-zero exit), a SIGKILLed run's leftovers are ended by
the next resume, and an interrupted run's verdict says it is partial."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support import observe
from tests.support.recipes import start_matrix, tree_recipe
from vllmdiag.cli.app import app
from vllmdiag.services import proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_ends_the_cells_tree_and_journals_it(tmp_path: Path, sig: int) -> None:
    path = tree_recipe(tmp_path, name="stop", question="does a stop leave anything behind?")
    run_dir = tmp_path / "run"
    runner = start_matrix(path, run_dir, "--json")
    pids = observe.pids_when_up(run_dir, "r1.baseline.w1")
    runner.send_signal(sig)
    stdout, stderr = runner.communicate(timeout=60)
    assert runner.returncode == 128 + sig, stderr.decode()
    assert not [p for p in pids if observe.running(p)], "the cell's tree outlived the stop"
    kinds = [e["event"] for e in observe.events(run_dir)]
    assert "cell_interrupted" in kinds
    finished = [e for e in observe.events(run_dir) if e["event"] == "run_finished"]
    assert finished and finished[-1]["status"] == "interrupted"
    report = json.loads(stdout)
    assert report["stopped_by"] == signal.Signals(sig).name
    assert report["verdict"]["partial"] is True
    outcomes = {c["id"]: c["outcome"] for c in report["cells"]}
    assert outcomes == {"r1.baseline.w1": "skipped", "r1.eager.w1": "skipped"}
    arms = {a["name"]: a["effect"] for a in report["verdict"]["arms"]}
    assert arms == {"eager": "not_run"}
    assert "No arm changes the outcome" not in report["verdict"]["summary"]
    assert report["verdict"]["summary"].startswith("Partial run")


def test_resume_ends_what_a_sigkilled_run_left_running(tmp_path: Path) -> None:
    path = tree_recipe(tmp_path, name="stop", question="does a stop leave anything behind?")
    run_dir = tmp_path / "run"
    runner = start_matrix(path, run_dir)
    pids = observe.pids_when_up(run_dir, "r1.baseline.w1")
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=30)
    time.sleep(0.3)
    assert all(observe.running(p) for p in pids), "SIGKILL of vllmdiag should leave the tree"
    spawned = [e for e in observe.events(run_dir) if e["event"] == "cell_spawned"]
    assert spawned and spawned[0]["pgid"] == spawned[0]["pid"] == pids[0]
    (tmp_path / "quick").write_text("")
    result = CliRunner().invoke(app, ["matrix", str(path), "--resume", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    assert not [p for p in pids if observe.running(p)], "resume left the earlier run's processes"
    ended = [e for e in observe.events(run_dir) if e["event"] == "leftovers_ended"]
    assert ended and set(pids) <= set(ended[0]["pids"])  # type: ignore[arg-type]
    assert "earlier, killed run" in result.stderr


def test_a_second_term_does_not_cut_the_cleanup_short(tmp_path: Path) -> None:
    path = tree_recipe(tmp_path, name="stop", question="does a stop leave anything behind?")
    run_dir = tmp_path / "run"
    runner = start_matrix(path, run_dir)
    pids = observe.pids_when_up(run_dir, "r1.baseline.w1")
    runner.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    runner.send_signal(signal.SIGTERM)  # a scheduler's second notice, during cleanup
    runner.communicate(timeout=60)
    assert runner.returncode == 128 + signal.SIGTERM
    assert not [p for p in pids if observe.running(p)]


def test_processes_are_found_by_their_cell_tag(tmp_path: Path) -> None:
    env = {**os.environ, proc.TAG_VAR: "abc:r1.x"}
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 10
        while child.pid not in proc.tagged("abc:") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.tagged("abc:").get(child.pid) == "abc:r1.x"
        assert child.pid not in proc.tagged("abd:")
        assert proc.end({child.pid}, grace_s=1) == {child.pid}
    finally:
        child.kill()
        child.wait()


def test_a_matrix_whose_legs_do_not_build_shows_uvs_error_and_fails(tmp_path: Path) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: legfail
        question: does a broken leg say why?
        legs:
          built:
            requirements: [packaging==0.0.0.1]
        baseline: {leg: built}
        workloads:
          w: {command: ["{python}", "-c", "print(1)"]}
        """)
    )
    result = CliRunner().invoke(app, ["matrix", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 1, result.output
    assert "leg built: failed install failed: error: No solution found" in result.output
    assert "there is no version of packaging==0.0.0.1" in result.output
    assert "Using Python" not in result.output
    assert "no cell could run" in result.output
