"""Is a difference real, on real vLLM timings: a two-release study (0.25 and 0.26 side by
side) measured in two batches under identical settings (the shape of issue 18's H200
case), and a metric matrix with repeats and an A/A pair (an arm vLLM 0.26 ignores). The
checks are the invariants the CPU suite cannot fake: a real run's noise estimate is
named with its source, an A/A pair is reported as measured noise, same-settings batches
are pooled (never "superseded"), and both the verdict and the tables regenerate from the
run directories alone. The run directories are kept under ``VLLMDIAG_DEVICE_OUT``
(``study``, ``aa``) and the CPU tests (``tests/e2e/test_vllm026_outputs.py``) regenerate
their tables and verdicts from them.

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

# The B200/H200 ablation's "mixed" shape, small enough for one tiny model: about 2M tokens, several
# seconds of timed generate on an H200.
SHAPE = "input_len: 1000\n            output_len: 1000\n            num_prompts: 1000"


def _second_python() -> Path:
    py = os.environ.get("VLLMDIAG_VLLM_PYTHON_2")
    if not py or not Path(py).exists():
        pytest.skip("set VLLMDIAG_VLLM_PYTHON_2 to a second vLLM release's python")
    return Path(py)


def test_a_two_release_study_in_two_same_settings_batches(
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
            unit: tok/s
        repeats: 1
        timeout: 420
        """,
    )
    out = tmp_path / "study"
    try:
        for batch in ("llama-first", "llama-again"):
            result = CliRunner().invoke(
                app,
                ["study", "run", str(recipe), "--out", str(out), "--batch", batch, "--json"],
            )
            assert result.exit_code == 0, result.output
    finally:
        if keep is not None and out.exists():
            shutil.copytree(out, keep / "study", dirs_exist_ok=True)
    canonical = (out / "CANONICAL.md").read_text()
    assert "superseded" not in canonical and "## Excluded runs (0)" in canonical
    for leg in ("0.25", "0.26"):
        assert f"| `llama` | mixed | {leg} | llama-first, llama-again |" in canonical
    tsv = (out / "tables/throughput.tsv").read_text().splitlines()
    row = dict(zip(tsv[1].split("\t"), tsv[2].split("\t"), strict=False))
    assert " n=2" in row["± 0.25"] and " n=2" in row["± 0.26"], row
    assert row["26/25 call"] in ("difference", "no difference detected"), row
    names = ("REPORT.md", "CANONICAL.md", "tables/throughput.tsv")
    before = {n: (out / n).read_bytes() for n in names}
    again = CliRunner().invoke(app, ["study", "tables", str(out)])
    assert again.exit_code == 0, again.output
    assert {n: (out / n).read_bytes() for n in names} == before
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
          input_len: 512
          output_len: 512
          num_prompts: 500
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
    verdict = report["verdict"]
    noise = verdict["noise"]["llama"]
    assert noise["value"] is not None and noise["n"] == 4, noise
    assert noise["source"] == "A/A pair inert arm attention-backend-env-triton", noise
    arm = verdict["arms"][0]
    assert arm["effect"] == "inert" and "measured noise (an A/A pair)" in arm["detail"], arm
    assert "## Noise (measured from this run)" in (run_dir / "summary.md").read_text()
    recorded = (run_dir / "verdict.json").read_bytes()
    again = CliRunner().invoke(app, ["matrix", "verdict", str(run_dir)])
    assert again.exit_code == 0, again.output
    assert (run_dir / "verdict.json").read_bytes() == recorded
    _keep(run_dir, keep, "aa")
    assert gpu_apps() == []
