"""Whose fault, and what fixes it, on a real vLLM engine: a user's own setting, the KV cache
starved (the hung cell is test_hang_device.py). Each check reads vllmdiag's own JSON; with
``VLLMDIAG_DEVICE_OUT`` set the run directories are kept (they become CPU fixtures).

    VLLMDIAG_VLLM_PYTHON=/opt/torch/.venv/bin/python3 VLLMDIAG_TINY_MODELS=/tmp/models \\
        python -m pytest tests/device/test_judgement_device.py
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.device.gpu import gpu_apps
from tests.device.test_matrix_device import QUIET_SAMPLER, _keep, _write
from vllmdiag.cli.app import app


def _run(recipe: Path, run_dir: Path, *extra: str) -> dict[str, object]:
    result = CliRunner().invoke(
        app, ["matrix", str(recipe), "--out", str(run_dir), "--json", *extra]
    )
    assert result.exit_code in (0, 1), result.output
    report: dict[str, object] = json.loads(result.stdout)
    return report


def _report(run_dir: Path) -> dict[str, object]:
    result = CliRunner().invoke(app, ["report", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    draft: dict[str, object] = json.loads(result.stdout)
    return draft


def test_a_users_max_model_len_is_the_users_setting_and_no_upstream_bug(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    recipe = _write(
        tmp_path,
        "user-setting",
        f"""\
        name: user-setting
        question: Why does the engine not start on this model, and which single change fixes it?
        legs:
          v026:
            path: {vllm_python}
        baseline:
          leg: v026
          env: {QUIET_SAMPLER}
          flags: [--max-model-len 65536]
        workload:
          builtin: vllm-smoke
        models:
          llama: {tiny_models / "llama"}
        arms: [max-model-len-2048, enforce-eager]
        timeout: 420
        """,
    )
    run_dir = tmp_path / "run"
    try:
        report = _run(recipe, run_dir)
        draft = _report(run_dir)
        (run_dir / "report.json").write_text(json.dumps(draft, indent=1))
    finally:
        _keep(run_dir, keep, "user-setting")
    arms = {a["name"]: a for a in report["verdict"]["arms"]}  # type: ignore[index]
    assert arms["max-model-len-2048"]["effect"] == "sufficient"
    assert arms["enforce-eager"]["effect"] == "ruled_out"
    cells = {c["arm"]: c for c in report["cells"]}  # type: ignore[index, union-attr]
    for arm in ("baseline", "enforce-eager"):
        assert cells[arm]["outcome"] == "fail", cells[arm]  # never an ERROR of the probe's
        root = cells[arm]["root_cause"]
        assert root["known"] == "max-model-len-above-positions", root
        assert (root["origin"], root["package"]) == ("config", None), root
        assert "65536" in root["message"] and root["why"], root
    target = draft["target"]  # type: ignore[index]
    assert (target["project"], target["kind"]) == ("", "not-a-bug"), target
    body = str(draft["body"])  # type: ignore[index]
    assert "Not an upstream bug: no issue to file." in body
    assert "`flag --max-model-len 2048` makes it pass" in body
    assert "`--max-model-len 65536`, came from the recipe's baseline flags" in body
    assert "CUDA used to build PyTorch   : None" not in body
    assert gpu_apps() == []


def test_a_starved_kv_cache_names_a_step_that_raises_the_budget(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    recipe = _write(
        tmp_path,
        "kv-raise",
        f"""\
        name: kv-raise
        question: Why does the engine not start, and which single change makes it start?
        legs:
          v026:
            path: {vllm_python}
        baseline:
          leg: v026
          env: {QUIET_SAMPLER}
          flags: [--gpu-memory-utilization 0.003, --max-model-len 1024]
        workload:
          builtin: vllm-smoke
        models:
          llama: {tiny_models / "llama"}
        arms: [gpu-memory-utilization-0.95, max-model-len-2048]
        timeout: 420
        """,
    )
    run_dir = tmp_path / "run"
    try:
        report = _run(recipe, run_dir)
    finally:
        _keep(run_dir, keep, "kv-raise")
    cells = {c["arm"]: c for c in report["cells"]}  # type: ignore[index, union-attr]
    assert cells["gpu-memory-utilization-0.95"]["outcome"] == "pass"
    arms = {a["name"]: a["effect"] for a in report["verdict"]["arms"]}  # type: ignore[index]
    assert arms["gpu-memory-utilization-0.95"] == "sufficient", arms
    assert arms["max-model-len-2048"] == "ruled_out", arms  # at 0.003 no length fits
    root = cells["baseline"]["root_cause"]
    assert root["message"].startswith("No available memory for the cache blocks"), root
    assert "gpu-memory-utilization-0.5" not in json.dumps(root), root
    assert root["known"] == "kv-cache-too-small" and root["origin"] == "config", root
    assert root["next_step"] == "vllmdiag arms show gpu-memory-utilization-0.95", root
    assert _report(run_dir)["target"]["kind"] == "not-a-bug"  # type: ignore[index]
    assert gpu_apps() == []
