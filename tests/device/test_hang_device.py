"""A real engine that hangs past its timeout: on an H200, vLLM 0.26 with
``--moe-backend flashinfer_cutlass`` on the small MoE model went silent right after
``torch.compile took 16.31 s`` and was killed at its timeout. Before the kill, vllmdiag
dumps the cell's Python processes with py-spy; the root cause names the timeout, the
start-up phase it got through and the stuck frames; nothing is left on the GPU.

py-spy must be reachable from vllmdiag's side: beside its python, on PATH, or named by
``VLLMDIAG_PY_SPY`` (the device image has none of its own)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from tests.device.gpu import gpu_apps
from vllmdiag.cli.app import app
from vllmdiag.spine.runner.hangdump import PY_SPY_VAR, find_py_spy

TIMEOUT_S = 150


def test_flashinfer_cutlass_moe_hang_is_dumped_and_named(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    assert find_py_spy() is not None, f"py-spy not found: put it on PATH or set {PY_SPY_VAR}"
    model = tiny_models / "moe"
    recipe = tmp_path / "hang.yaml"
    recipe.write_text(
        textwrap.dedent(
            f"""\
            name: moe-hang
            question: Where does the flashinfer_cutlass MoE start-up hang?
            legs:
              v026:
                path: {vllm_python}
            baseline:
              leg: v026
              env: {{VLLM_NO_USAGE_STATS: "1", DO_NOT_TRACK: "1", VLLM_USE_FLASHINFER_SAMPLER: "0"}}
              flags: [--moe-backend flashinfer_cutlass, --max-model-len 2048]
            workloads:
              moe:
                builtin: vllm-throughput
                model: {model}
                input_len: 128
                output_len: 32
                num_prompts: 16
            timeout: {TIMEOUT_S}
            """
        )
    )
    run_dir = tmp_path / "run"
    try:
        result = CliRunner().invoke(app, ["matrix", str(recipe), "--out", str(run_dir), "--json"])
    finally:
        if keep is not None and run_dir.exists():
            shutil.copytree(run_dir, keep / "moe-hang", dirs_exist_ok=True)
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    cell = report["cells"][0]
    assert cell["outcome"] == "timeout", (cell["outcome"], cell["reason"], cell["root_cause"])
    hang = cell["hang"]
    assert hang is not None and hang["timeout_s"] == TIMEOUT_S
    cell_dir = run_dir / "cells" / cell["id"]
    dumped = [p for p in hang["processes"] if p["note"] is None]
    assert dumped, hang
    for p in dumped:
        text = (cell_dir / p["file"]).read_text()
        assert f"Process {p['pid']}" in text and "Thread " in text
    stuck = hang["stuck"]
    assert stuck is not None and stuck["frames"], hang
    assert "EngineCore" in stuck["title"], stuck
    assert hang["after_phase"], hang  # the log got through some start-up phase
    root = cell["root_cause"]
    assert root["type"] == "Timeout" and root["evidence"] == "hang-dump", root
    assert f"killed at its {TIMEOUT_S} s timeout, after {hang['after_phase']}" in root["message"]
    assert stuck["frames"][0]["function"] in root["message"]
    timeline = json.loads((cell_dir / "result.json").read_text())["fingerprint"]["startup"]
    assert timeline["killed"] and not timeline["ready"], timeline
    assert timeline["phases"][-1]["end"] == "killed", timeline
    assert gpu_apps() == []
