"""A cell tree a SIGKILLed vllmdiag left running is found from any run: ``doctor`` reports
it by pid, and the next job that takes the node lock (a new matrix into another directory)
ends it, says which pids, and journals them."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support import observe
from tests.support.recipes import start_matrix, tree_recipe
from vllmdiag.cli.app import app


def _findings(recipe: Path) -> dict[str, dict[str, str]]:
    result = CliRunner().invoke(app, ["doctor", str(recipe), "--no-gpu", "--json"])
    findings: list[dict[str, str]] = json.loads(result.stdout)["findings"]
    return {f["code"]: f for f in findings if f["code"] in ("leftover-cells", "running-job")}


def _leftover_finding(recipe: Path) -> dict[str, str]:
    return _findings(recipe)["leftover-cells"]


def test_a_new_matrix_ends_what_a_killed_run_left_and_doctor_reports_it(tmp_path: Path) -> None:
    path = tree_recipe(tmp_path, name="stop", question="does a stop leave anything behind?")
    first = tmp_path / "first"
    runner = start_matrix(path, first)
    pids = observe.pids_when_up(first, "r1.baseline.w1")
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=30)
    time.sleep(0.3)
    assert all(observe.running(p) for p in pids), "SIGKILL of vllmdiag should leave the tree"

    finding = _leftover_finding(path)
    assert finding["severity"] == "contaminated"
    assert all(f"pid {p} (cell r1.baseline.w1)" in finding["message"] for p in pids)
    assert "kill " in finding["hint"]

    (tmp_path / "quick").write_text("")
    second = tmp_path / "second"
    result = CliRunner().invoke(app, ["matrix", str(path), "--out", str(second), "--grace", "1"])
    assert result.exit_code == 0, result.output
    assert not [p for p in pids if observe.running(p)], "a new matrix left them running"
    said = " ".join(result.output.split())  # the live view wraps long lines
    assert "earlier, killed run left running on this node" in said
    assert all(f"pid {p}" in said for p in pids)
    ended = [e for e in observe.events(second) if e["event"] == "leftovers_ended"]
    assert ended and set(pids) <= set(ended[0]["pids"])
    assert "r1.baseline.w1" in " ".join(ended[0]["tags"])
    assert "before the cells ran: ended" in (second / "summary.md").read_text()
    assert _leftover_finding(path)["severity"] == "ok"


def test_a_running_jobs_cells_are_neither_leftovers_nor_another_nodes(tmp_path: Path) -> None:
    path = tree_recipe(tmp_path, name="stop", question="does a stop leave anything behind?")
    first = tmp_path / "first"
    runner = start_matrix(path, first)  # runs under this test's VLLMDIAG_LOCK
    try:
        pids = observe.pids_when_up(first, "r1.baseline.w1")
        mp = pytest.MonkeyPatch()
        mp.setenv("VLLMDIAG_LOCK", str(tmp_path / "other-node.lock"))
        try:  # under another lock: another node's cells, not this one's
            assert set(_findings(path)) == {"leftover-cells"}
            assert _leftover_finding(path)["severity"] == "ok"
        finally:
            mp.undo()
        found = _findings(path)  # under its own lock, while it runs: that job's cells
        assert found["leftover-cells"]["severity"] == "ok"
        running = found["running-job"]
        assert running["severity"] == "warning", running
        assert f"pid {runner.pid}" in running["message"]
        assert all(f"pid {p} " in running["message"] for p in pids)
    finally:
        runner.send_signal(signal.SIGTERM)
        runner.communicate(timeout=60)


def test_a_lock_file_made_again_under_a_running_job_does_not_end_its_cells(
    tmp_path: Path,
) -> None:
    """The lock file removed (a /tmp cleaner) while a job holds it: a second job takes a
    new one, and must leave the first job's cells alone, their vllmdiag being alive."""
    path = tree_recipe(tmp_path, name="stop", question="does a stop leave anything behind?")
    first = tmp_path / "first"
    runner = start_matrix(path, first)
    try:
        pids = observe.pids_when_up(first, "r1.baseline.w1")
        lock = Path(os.environ["VLLMDIAG_LOCK"])
        lock.unlink()
        (tmp_path / "quick").write_text("")
        second = tmp_path / "second"
        result = CliRunner().invoke(app, ["matrix", str(path), "--out", str(second)])
        assert result.exit_code == 0, result.output
        assert all(observe.running(p) for p in pids), "a live job's cells were ended"
        assert not [e for e in observe.events(second) if e["event"] == "leftovers_ended"]
    finally:
        runner.send_signal(signal.SIGTERM)
        runner.communicate(timeout=60)
