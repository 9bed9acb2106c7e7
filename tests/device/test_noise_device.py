"""Is a difference real, on real vLLM timings: a two-release study (0.25 and 0.26 side by
side) and a metric matrix with repeats and an A/A pair (an arm vLLM 0.26 ignores). The run
directories are kept under ``VLLMDIAG_DEVICE_OUT`` and the CPU tests regenerate their
tables and verdicts from them.

    VLLMDIAG_VLLM_PYTHON=/opt/torch/.venv/bin/python3 VLLMDIAG_VLLM_PYTHON_2=/tmp/v025/bin/python \\
    VLLMDIAG_TINY_MODELS=/tmp/models python -m pytest tests/device/test_noise_device.py
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.device.gpu import gpu_apps
from tests.device.test_matrix_device import QUIET_SAMPLER, _keep, _write
from vllmdiag.cli.app import app

# The seeds' "mixed" shape, small enough for one tiny model: about 2M tokens, several
# seconds of timed generate on an H200.
SHAPE = "input_len: 1000\n            output_len: 1000\n            num_prompts: 1000"


def _second_python() -> Path:
    py = os.environ.get("VLLMDIAG_VLLM_PYTHON_2")
    if not py or not Path(py).exists():
        pytest.skip("set VLLMDIAG_VLLM_PYTHON_2 to a second vLLM release's python")
    return Path(py)


def test_a_two_release_study_with_repeats(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    older = _second_python()
    recipe = _write(
        tmp_path,
        "two-releases",
        f"""\
        name: two-releases
        question: Is vLLM 0.26 faster than 0.25 on a small Llama, beyond the noise?
        legs:
          "0.25":
            path: {older}
          "0.26":
            path: {vllm_python}
        harness:
          env: {QUIET_SAMPLER}
          flags: [--max-model-len 2048, --seed 0]
        models:
          llama: {{model: {tiny_models / "llama"}, tp: 1}}
        workloads:
          mixed:
            builtin: vllm-throughput
            {SHAPE}
            metrics: [throughput]
        metrics:
          throughput:
            json: throughput.json
            key: tokens_per_second
            better: higher
        repeats: 2
        timeout: 420
        """,
    )
    out = tmp_path / "study"
    try:
        result = CliRunner().invoke(app, ["study", "run", str(recipe), "--out", str(out), "--json"])
    finally:
        if keep is not None and out.exists():
            shutil.copytree(out, keep / "study", dirs_exist_ok=True)
    assert result.exit_code == 0, result.output
    report = (out / "REPORT.md").read_text()
    assert "llama" in report
    assert gpu_apps() == []


def test_a_metric_matrix_with_repeats_measures_its_own_noise(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    recipe = _write(
        tmp_path,
        "aa",
        f"""\
        name: aa
        question: Does an arm vLLM 0.26 ignores change throughput (an A/A pair)?
        legs:
          v026:
            path: {vllm_python}
        baseline:
          leg: v026
          env: {QUIET_SAMPLER}
          flags: [--max-model-len 2048, --seed 0]
        metrics:
          - {{name: tokens_per_second, json: throughput.json, key: tokens_per_second}}
        workload:
          builtin: vllm-throughput
          input_len: 1000
          output_len: 1000
          num_prompts: 1000
        models:
          llama: {tiny_models / "llama"}
        arms: [attention-backend-env-triton]
        repeats: 2
        timeout: 420
        """,
    )
    run_dir = tmp_path / "run"
    try:
        result = CliRunner().invoke(app, ["matrix", str(recipe), "--out", str(run_dir), "--json"])
    finally:
        _keep(run_dir, keep, "aa")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    values = [c["metrics"]["tokens_per_second"] for c in report["cells"]]
    assert len(values) == 4 and all(v > 0 for v in values), values
    assert gpu_apps() == []
