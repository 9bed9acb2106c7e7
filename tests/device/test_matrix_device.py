"""Matrices on a real vLLM engine: a real start-up failure (the KV cache starved) and the
single change that fixes it, the throughput built-in's workload shape, a stop signal in
the middle of an engine start. Each check reads vllmdiag's own JSON."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from typer.testing import CliRunner

from tests.device.gpu import gpu_apps
from vllmdiag.cli.app import app

QUIET = '{VLLM_NO_USAGE_STATS: "1", DO_NOT_TRACK: "1"}'
# The same, without FlashInfer's sampler: its kernels are JIT-built at the first start on
# a host without flashinfer-jit-cache (about 90 s of every fresh engine start).
QUIET_SAMPLER = '{VLLM_NO_USAGE_STATS: "1", DO_NOT_TRACK: "1", VLLM_USE_FLASHINFER_SAMPLER: "0"}'


def _write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def _matrix(recipe: Path, run_dir: Path) -> dict[str, object]:
    result = CliRunner().invoke(app, ["matrix", str(recipe), "--out", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    report: dict[str, object] = json.loads(result.stdout)
    return report


def _keep(run_dir: Path, keep: Path | None, name: str) -> None:
    if keep is not None:
        shutil.copytree(run_dir, keep / name, dirs_exist_ok=True)


def test_kv_cache_starved_start_memory_arm_sufficient(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    recipe = _write(
        tmp_path,
        "kv-starved",
        f"""\
        name: kv-starved
        question: Why does the engine not start, and which single change makes it start?
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
        arms: [gpu-memory-utilization-0.5, enforce-eager, attention-backend-env-triton]
        timeout: 420
        """,
    )
    run_dir = tmp_path / "run"
    try:
        report = _matrix(recipe, run_dir)
    finally:
        _keep(run_dir, keep, "kv-starved")
    arms = {a["name"]: a for a in report["verdict"]["arms"]}  # type: ignore[index]
    assert arms["gpu-memory-utilization-0.5"]["effect"] == "sufficient"
    assert arms["enforce-eager"]["effect"] == "ruled_out"
    assert arms["attention-backend-env-triton"]["effect"] == "inert"
    cells = {c["arm"]: c for c in report["cells"]}  # type: ignore[index, union-attr]
    for arm in ("baseline", "enforce-eager", "attention-backend-env-triton"):
        cell = cells[arm]
        assert cell["outcome"] == "fail", cell
        root = cell["root_cause"]
        # raised in vLLM's engine core, but vLLM says to change the user's setting
        assert (root["origin"], root["raised_in"]) == ("config", "vllm"), root
        assert root["process"] and root["process"].startswith("EngineCore"), root
        assert root["type"] and "Wrapper" not in root["type"], root
    assert cells["gpu-memory-utilization-0.5"]["outcome"] == "pass"
    assert gpu_apps() == []


def test_throughput_builtin_takes_the_asked_shape_and_a_wrong_spelling_is_caught(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    model = tiny_models / "llama"
    recipe = _write(
        tmp_path,
        "shape",
        f"""\
        name: shape
        question: Does each cell run the workload the recipe asks?
        legs:
          v026:
            path: {vllm_python}
        baseline:
          leg: v026
          env: {QUIET}
          flags: [--max-model-len 2048]
        metrics:
          - {{name: tokens_per_second, json: throughput.json, key: tokens_per_second}}
        workloads:
          builtin:
            builtin: vllm-throughput
            model: {model}
            input_len: 128
            output_len: 32
            num_prompts: 64
          plain-spelling:
            command: >-
              vllm bench throughput --model {model} --dataset-name random --input-len 128
              --output-len 32 --num-prompts 64 --output-json {{out_dir}}/throughput.json {{flags}}
            input_len: 128
            output_len: 32
            num_prompts: 64
        timeout: 420
        """,
    )
    run_dir = tmp_path / "run"
    try:
        report = _matrix(recipe, run_dir)
    finally:
        _keep(run_dir, keep, "shape")
    cells = {c["workload"]: c for c in report["cells"]}  # type: ignore[index, union-attr]
    good = cells["builtin"]
    assert good["outcome"] == "pass", good
    assert good["metrics"]["tokens_per_second"] > 0
    result = json.loads((run_dir / "cells" / good["id"] / "result.json").read_text())
    shape = result["fingerprint"]["workload"]
    assert shape["num_prompts"] == 64
    assert abs(shape["prompt_tokens"] - 64 * 128) <= 64 * 128 * 0.02
    assert shape["output_tokens"] == 64 * 32
    bad = cells["plain-spelling"]
    assert bad["outcome"] == "error", bad
    assert "did not take the shape the recipe asked" in bad["reason"]
    assert "1,024 per prompt" in bad["reason"]
    assert gpu_apps() == []


def test_sigterm_mid_start_leaves_nothing_on_the_gpu(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    recipe = _write(
        tmp_path,
        "term",
        f"""\
        name: term
        question: Does a stopped matrix leave the engine behind?
        legs:
          v026:
            path: {vllm_python}
        baseline:
          leg: v026
          env: {QUIET}
          flags: [--max-model-len 1024]
        workload:
          builtin: vllm-throughput
          input_len: 128
          output_len: 32
          num_prompts: 2000
        models:
          llama: {tiny_models / "llama"}
        timeout: 420
        """,
    )
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()", "matrix"]
    runner = subprocess.Popen(
        [*cmd, str(recipe), "--out", str(run_dir), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not gpu_apps():
            assert runner.poll() is None, runner.communicate()[1].decode()[-2000:]
            time.sleep(1)
        assert gpu_apps(), "the engine never reached the GPU"
        time.sleep(5)  # let EngineCore and its workers settle on the device
        runner.send_signal(signal.SIGTERM)
        stdout, stderr = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
        _keep(run_dir, keep, "sigterm")
    assert runner.returncode == 128 + signal.SIGTERM, stderr.decode()[-2000:]
    deadline = time.monotonic() + 30
    while gpu_apps() and time.monotonic() < deadline:
        time.sleep(1)
    assert gpu_apps() == [], "the engine outlived the stop"
    events = [json.loads(x) for x in (run_dir / "run.jsonl").read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert "cell_interrupted" in kinds
    assert events[-1]["event"] == "run_finished" and events[-1]["status"] == "interrupted"
    assert json.loads(stdout)["stopped_by"] == "SIGTERM"
