"""``matrix --executor ray`` refuses what cannot work before anything runs, in one line
with what to do: Ray hidden (as on a machine without the extra), an address without the
Ray executor, ``--gpus`` for a cluster whose nodes declare their own. No Ray needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.recipes import write_recipe
from vllmdiag.cli.app import app


def _recipe(tmp_path: Path) -> Path:
    return write_recipe(tmp_path, 'baseline: {leg: here}\nworkloads:\n  w: {command: "true"}\n')


def _refused(tmp_path: Path, *args: str) -> dict[str, str]:
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["matrix", str(_recipe(tmp_path)), "--out", str(run_dir), *args, "--json"]
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert not run_dir.exists(), "a refused run must not leave a run directory"
    error: dict[str, str] = json.loads(result.stdout)
    return error


def test_without_ray_the_ray_executor_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails, as without the extra
    error = _refused(tmp_path, "--executor", "ray")
    assert "needs Ray, which is not installed here" in error["error"]
    assert "pip install 'vllmdiag[ray]'" in error["hint"]


def test_an_address_needs_the_ray_executor(tmp_path: Path) -> None:
    error = _refused(tmp_path, "--address", "10.0.0.1:6379")
    assert error["hint"] == "add --executor ray, or drop --address"


def test_gpus_are_not_set_for_a_cluster(tmp_path: Path) -> None:
    error = _refused(tmp_path, "--executor", "ray", "--address", "10.0.0.1:6379", "--gpus", "2")
    assert "--gpus sets the GPUs of a Ray instance vllmdiag starts itself" in error["error"]


def test_an_unknown_executor_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["matrix", str(_recipe(tmp_path)), "--executor", "slurm"])
    assert result.exit_code == 2
    assert "slurm" in result.output
