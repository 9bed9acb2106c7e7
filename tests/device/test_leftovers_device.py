"""A real engine a SIGKILLed vllmdiag left on the GPU: ``doctor`` reports it by pid, and
the next matrix, into another run directory, ends it before its own cells (the GPU is
free again) and journals which pids it ended. The cell's vLLM processes (API server or
bench, EngineCore, workers) are all tagged, so every one of them is found."""

from __future__ import annotations

import json
import os
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
from vllmdiag.services import proc, stray

QUIET = '{VLLM_NO_USAGE_STATS: "1", DO_NOT_TRACK: "1", VLLM_USE_FLASHINFER_SAMPLER: "0"}'


def _recipe(tmp_path: Path, vllm_python: Path, tiny_models: Path, prompts: int) -> Path:
    path = tmp_path / f"left-{prompts}.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: left
            question: Does a killed matrix leave its engine on the GPU for the next one?
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
              num_prompts: {prompts}
            models:
              llama: {tiny_models / "llama"}
            timeout: 420
            """
        )
    )
    return path


def _end_cells_of_this_test() -> None:
    """End every process a cell of this test's runs started, owned or left over (found
    as vllmdiag finds them: by the node lock their cell environment names, the test's own
    ``VLLMDIAG_LOCK``)."""
    found = stray.strays(Path(os.environ["VLLMDIAG_LOCK"]))
    proc.end({s.pid for s in found}, 5.0)


def test_a_killed_runs_engine_is_reported_and_ended_by_the_next_matrix(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    assert gpu_apps() == [], "the GPU is not free before the test"
    first = tmp_path / "first"
    cmd = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()", "matrix"]
    runner = subprocess.Popen(
        [*cmd, str(_recipe(tmp_path, vllm_python, tiny_models, 200000)), "--out", str(first)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not gpu_apps():
            assert runner.poll() is None, "the first matrix ended before its engine started"
            time.sleep(1)
        assert gpu_apps(), "the engine never reached the GPU"
        time.sleep(5)
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
        time.sleep(3)
        held = gpu_apps()
        assert held, "SIGKILL of vllmdiag should leave the engine on the GPU"
        # nvidia-smi may name pids of another pid namespace: check those we can see
        on_gpu = {int(line.split(",")[0]) for line in held}
        on_gpu = {pid for pid in on_gpu if Path(f"/proc/{pid}").exists()}

        doctor = CliRunner().invoke(app, ["doctor", str(vllm_python), "--json"])
        findings = {f["code"]: f for f in json.loads(doctor.stdout)["findings"]}
        left = findings["leftover-cells"]
        assert left["severity"] == "contaminated", left
        assert "(cell r1.baseline.llama)" in left["message"]
        assert all(f"pid {pid} " in left["message"] for pid in on_gpu), (left, held)

        second = tmp_path / "second"
        result = CliRunner().invoke(
            app,
            [
                "matrix",
                str(_recipe(tmp_path, vllm_python, tiny_models, 20)),
                "--out",
                str(second),
                "--grace",
                "10",
                "--json",
            ],
        )
        assert result.exit_code == 0, result.output
        ended = [
            json.loads(x)
            for x in (second / "run.jsonl").read_text().splitlines()
            if '"leftovers_ended"' in x
        ]
        assert ended and ended[0]["pids"] and on_gpu <= set(ended[0]["pids"]), (ended, held)
        outcomes = [c["outcome"] for c in json.loads(result.stdout)["cells"]]
        assert outcomes == ["pass"], outcomes  # its own engine had the GPU to itself
        deadline = time.monotonic() + 30
        while gpu_apps() and time.monotonic() < deadline:
            time.sleep(1)
        assert gpu_apps() == []
    finally:
        if runner.poll() is None:
            runner.kill()
        _end_cells_of_this_test()  # an interrupted test must not leave its engine to the next
        if keep is not None:
            for run in (first, tmp_path / "second"):
                if run.exists():
                    shutil.copytree(run, keep / f"leftovers-{run.name}", dirs_exist_ok=True)
