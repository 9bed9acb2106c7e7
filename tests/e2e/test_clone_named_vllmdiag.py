"""A checkout under git's default folder name: the README's first command in a directory
called ``vllmdiag``. Frames of the recipe's scripts there are the workload's, not the
tool's: the B200/H200 ablation's verdict holds, for ``matrix`` and for ``bisect --recipe``. Real uv
environments from the real index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import REPO
from vllmdiag.cli.app import app

pytestmark = [pytest.mark.network, pytest.mark.slow]


def _clone(tmp_path: Path) -> Path:
    """The CPU reproduction laid out as a clone named ``vllmdiag`` holds it."""
    root = tmp_path / "vllmdiag"
    (root / "recipes").mkdir(parents=True)
    shutil.copy(REPO / "recipes" / "thrmma-cpu.yaml", root / "recipes" / "thrmma-cpu.yaml")
    shutil.copytree(REPO / "recipes" / "thrmma", root / "recipes" / "thrmma")
    return root / "recipes" / "thrmma-cpu.yaml"


def test_the_cpu_reproduction_in_a_folder_named_vllmdiag_gives_the_ablation_s_verdict(
    tmp_path: Path,
) -> None:
    recipe = _clone(tmp_path)
    result = CliRunner().invoke(
        app, ["matrix", str(recipe), "--out", str(tmp_path / "run"), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    effects = {a["name"]: a["effect"] for a in report["verdict"]["arms"]}
    assert effects == {
        "omp-num-threads-1": "ruled_out",
        "enforce-eager": "ruled_out",
        "nvidia-cutlass-dsl-4.5.3": "sufficient",
    }
    failing = [c for c in report["cells"] if c["arm"] != "nvidia-cutlass-dsl-4.5.3"]
    assert {c["outcome"] for c in failing} == {"fail"}  # none an "error" of the tool's
    root = failing[0]["root_cause"]
    assert root["raised_in"] == "script" and "/vllmdiag/recipes/thrmma/" in root["frames"][-1]
    assert (root["origin"], root["package"]) == ("dependency", "nvidia-cutlass-dsl")
    assert "ThrMma" in root["why"]


def test_bisect_of_the_recipe_in_a_folder_named_vllmdiag_finds_the_release(
    tmp_path: Path,
) -> None:
    recipe = _clone(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "bisect",
            "nvidia-cutlass-dsl",
            "--good",
            "4.5.3",
            "--bad",
            "4.6.0",
            "--recipe",
            str(recipe),
            "--cell",
            "wrapper-import",
            "--fresh",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    steps = {s["version"]: s for s in data["steps"]}
    assert steps["4.6.0"]["verdict"] == "bad" and "ThrMma" in steps["4.6.0"]["detail"]
    assert steps["4.5.3"]["verdict"] == "good"
    assert data["first_bad"] == "4.6.0"
