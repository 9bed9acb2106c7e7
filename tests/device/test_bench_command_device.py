"""A ``vllm bench throughput`` command workload on a real vLLM 0.26 engine: the length
flags its random dataset ignores are caught at load and by the run's own totals; the
right spelling (here in the ``python -m vllm.entrypoints.cli.main`` form) passes, its
totals checked against what the command asked, and its sub-second timed region is said.
Each check reads vllmdiag's own output.

    VLLMDIAG_VLLM_PYTHON=/opt/torch/.venv/bin/python3 VLLMDIAG_TINY_MODELS=/tmp/models \\
        VLLMDIAG_DEVICE_OUT=/tmp/keep python -m pytest -m device \\
        tests/device/test_bench_command_device.py
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from tests.device.gpu import gpu_apps
from vllmdiag.cli.app import app

QUIET = '{VLLM_NO_USAGE_STATS: "1", DO_NOT_TRACK: "1"}'


def test_a_command_workload_is_shape_checked_from_its_own_arguments(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    model = tiny_models / "llama"
    recipe = tmp_path / "bench-command.yaml"
    recipe.write_text(
        textwrap.dedent(f"""\
        name: bench-command
        question: Does each vllm bench command run the workload it asks?
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
          plain-spelling:
            command: >-
              vllm bench throughput --model {model} --dataset-name random --input-len 64
              --output-len 16 --num-prompts 32 --output-json {{out_dir}}/throughput.json
              {{flags}}
          module-form:
            command: >-
              {{python}} -m vllm.entrypoints.cli.main bench throughput --model {model}
              --dataset-name random --random-input-len 64 --random-output-len 16
              --num-prompts 32 --output-json {{out_dir}}/throughput.json {{flags}}
        timeout: 420
        """)
    )
    dry = CliRunner().invoke(app, ["matrix", str(recipe), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    said = " ".join(dry.output.split())
    assert "workloads.plain-spelling.command: --output-len 16 is ignored by --dataset-name " \
        "random" in said  # fmt: skip
    assert "module-form" not in said.split("warning:", 1)[-1]
    run_dir = tmp_path / "run"
    try:
        res = CliRunner().invoke(app, ["matrix", str(recipe), "--out", str(run_dir), "--json"])
    finally:
        if keep is not None:
            import shutil

            shutil.copytree(run_dir, keep / "bench-command", dirs_exist_ok=True)
    assert res.exit_code == 0, res.output
    cells = {c["workload"]: c for c in json.loads(res.stdout)["cells"]}
    bad = cells["plain-spelling"]
    assert bad["outcome"] == "error", bad
    assert "4,096 output tokens (128 per prompt) where 16 per prompt" in bad["reason"]
    good = cells["module-form"]
    assert good["outcome"] == "pass", good
    result = json.loads((run_dir / "cells" / good["id"] / "result.json").read_text())
    shape = result["fingerprint"]["workload"]
    assert shape["num_prompts"] == 32 and shape["output_tokens"] == 32 * 16
    elapsed = json.loads((run_dir / "cells" / good["id"] / "out/throughput.json").read_text())
    if elapsed["elapsed_time"] < 10:
        assert result["warnings"] and "timed region lasted" in result["warnings"][0]
        assert "## Warnings" in (run_dir / "summary.md").read_text()
    assert gpu_apps() == []
