"""Whose fault, on a real vLLM engine: a length the model cannot hold is the user's
setting (no upstream bug to draft), and a starved KV cache is told to raise the share,
as vLLM's message says. Each check reads vllmdiag's own JSON.

Run on the H200 host (see /work/shared/device/README.md):

    VLLMDIAG_VLLM_PYTHON=/opt/torch/.venv/bin/python3 VLLMDIAG_TINY_MODELS=/tmp/models \
    VLLMDIAG_DEVICE_OUT=$OUT python -m pytest -q tests/device/test_blame_device.py
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.device.gpu import gpu_apps
from vllmdiag.cli.app import app

QUIET = '{VLLM_NO_USAGE_STATS: "1", DO_NOT_TRACK: "1"}'


def _matrix(tmp_path: Path, name: str, body: str, keep: Path | None) -> tuple[Path, dict[str, Any]]:
    recipe = tmp_path / f"{name}.yaml"
    recipe.write_text(textwrap.dedent(body))
    run_dir = tmp_path / "run"
    try:
        result = CliRunner().invoke(app, ["matrix", str(recipe), "--out", str(run_dir), "--json"])
    finally:
        if keep is not None and run_dir.exists():
            shutil.copytree(run_dir, keep / name, dirs_exist_ok=True)
    assert result.exit_code == 0, result.output
    return run_dir, json.loads(result.stdout)


def test_a_length_above_the_models_positions_is_the_users_config_and_no_bug(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    """The tiny llama has max_position_embeddings 4096; the baseline asks 65536."""
    run_dir, report = _matrix(
        tmp_path,
        "max-model-len",
        f"""\
        name: max-model-len
        question: Why does the engine refuse to start, and whose setting is it?
        legs:
          v026:
            path: {vllm_python}
        baseline:
          leg: v026
          env: {QUIET}
          flags: [--max-model-len 65536]
        workload:
          builtin: vllm-smoke
        models:
          llama: {tiny_models / "llama"}
        arms: [max-model-len-2048, enforce-eager]
        timeout: 420
        """,
        keep,
    )
    arms = {a["name"]: a["effect"] for a in report["verdict"]["arms"]}
    assert arms == {"max-model-len-2048": "sufficient", "enforce-eager": "ruled_out"}
    cells = {c["arm"]: c for c in report["cells"]}
    for arm in ("baseline", "enforce-eager"):
        cell = cells[arm]
        assert cell["outcome"] == "fail", cell  # never an ERROR of the probe's
        root = cell["root_cause"]
        assert root["known"] == "max-model-len-above-positions", root
        assert (root["origin"], root["package"]) == ("config", None), root
        assert "65536" in root["message"] and root["why"], root
    assert cells["max-model-len-2048"]["outcome"] == "pass"
    drafted = CliRunner().invoke(app, ["report", str(run_dir), "--json"])
    assert drafted.exit_code == 0, drafted.output
    issue = json.loads(drafted.stdout)
    if keep is not None:
        (keep / "max-model-len" / "report.json").write_text(json.dumps(issue, indent=2))
    assert (issue["target"]["project"], issue["target"]["kind"]) == ("", "not-a-bug")
    assert "pydantic" not in issue["target"]["project"]
    body = issue["body"]
    assert "Not an upstream bug: no issue to file." in body
    assert "`flag --max-model-len 2048` makes it pass" in body
    assert "`--max-model-len 65536`, came from the recipe's baseline flags" in body
    assert "CUDA used to build PyTorch   : None" not in body
    assert gpu_apps() == []


def test_a_starved_kv_cache_is_told_to_raise_the_share_and_that_fixes_it(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    """vLLM: "No available memory for the cache blocks. Try increasing
    gpu_memory_utilization"; the next step names the arm that raises it."""
    run_dir, report = _matrix(
        tmp_path,
        "kv-raise",
        f"""\
        name: kv-raise
        question: Which single change gives the KV cache room?
        legs:
          v026:
            path: {vllm_python}
        baseline:
          leg: v026
          env: {QUIET}
          flags: [--gpu-memory-utilization 0.003, --max-model-len 1024]
        workload:
          builtin: vllm-smoke
        models:
          llama: {tiny_models / "llama"}
        arms: [gpu-memory-utilization-0.95, max-model-len-2048]
        timeout: 420
        """,
        keep,
    )
    arms = {a["name"]: a["effect"] for a in report["verdict"]["arms"]}
    assert arms["gpu-memory-utilization-0.95"] == "sufficient", arms
    assert arms["max-model-len-2048"] == "ruled_out", arms  # at 0.003 no length fits
    base = next(c for c in report["cells"] if c["arm"] == "baseline")
    root = base["root_cause"]
    assert root["known"] == "kv-cache-too-small" and root["origin"] == "config", root
    assert root["next_step"] == "vllmdiag arms show gpu-memory-utilization-0.95", root
    drafted = CliRunner().invoke(app, ["report", str(run_dir), "--json"])
    assert drafted.exit_code == 0, drafted.output
    assert json.loads(drafted.stdout)["target"]["kind"] == "not-a-bug"
    assert gpu_apps() == []
