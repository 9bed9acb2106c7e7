"""``--dry-run`` against real vLLM legs given as venv directories (``path: /opt/torch/.venv``,
and the second staged release when ``VLLMDIAG_VLLM_PYTHON_2`` is set): each leg's real
interpreter and Python version, and every cell's line byte for byte the command its log
header records after the run (the smoke probe and ``vllm bench throughput`` built-ins).

    VLLMDIAG_VLLM_PYTHON=/opt/torch/.venv/bin/python3 VLLMDIAG_VLLM_PYTHON_2=/tmp/v025/bin/python \\
        VLLMDIAG_TINY_MODELS=/tmp/models VLLMDIAG_DEVICE_OUT=/tmp/keep python -m pytest -m device \\
        tests/device/test_dry_run_device.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from vllmdiag.cli.app import app


def _venv_of(python: Path) -> Path:
    return python.parent.parent if python.parent.name == "bin" else python.parent


def test_a_dry_run_of_real_legs_is_what_runs(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    venvs = {"v026": _venv_of(vllm_python)}
    if os.environ.get("VLLMDIAG_VLLM_PYTHON_2"):
        venvs["v025"] = _venv_of(Path(os.environ["VLLMDIAG_VLLM_PYTHON_2"]))
    legs = "\n".join(f"  {name}: {{path: {path}}}" for name, path in venvs.items())
    arms = "".join(f"  - {{name: on-{n}, leg: {n}}}\n" for n in venvs if n != "v026")
    recipe = tmp_path / "dry.yaml"
    recipe.write_text(
        textwrap.dedent(f"""\
        name: dry
        question: Is the dry-run what runs?
        legs:
        {{legs}}
        baseline:
          leg: v026
          env: {{VLLM_NO_USAGE_STATS: "1", DO_NOT_TRACK: "1"}}
          flags: [--max-model-len 2048]
        workloads:
          smoke: {{builtin: vllm-smoke, model: {tiny_models / "llama"}}}
          tput:
            builtin: vllm-throughput
            model: {tiny_models / "llama"}
            input_len: 64
            output_len: 16
            num_prompts: 32
        timeout: 420
        """).replace("{legs}", legs)
        + (f"arms:\n{arms}" if arms else "")
    )
    run_dir = tmp_path / "run"
    runner = CliRunner()
    text = runner.invoke(app, ["matrix", str(recipe), "--dry-run", "--out", str(run_dir)])
    assert text.exit_code == 0, text.output
    plan = json.loads(
        runner.invoke(
            app, ["matrix", str(recipe), "--dry-run", "--out", str(run_dir), "--json"]
        ).stdout
    )
    for leg in plan["legs"]:
        python = Path(leg["interpreter"])
        assert python.parent == venvs[leg["name"]] / "bin", leg  # never the venv itself
        real = subprocess.run(
            [str(python), "-c", "import platform; print(platform.python_version())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert leg["python"] == real, leg
    try:
        res = runner.invoke(app, ["matrix", str(recipe), "--out", str(run_dir), "--json"])
    finally:
        if keep is not None:
            shutil.copytree(run_dir, keep / "dry-run", dirs_exist_ok=True)
    lines = text.output.splitlines()
    for cell in plan["cells"]:
        header = (run_dir / "cells" / cell["id"] / "log.txt").read_text().splitlines()[1]
        result = json.loads((run_dir / "cells" / cell["id"] / "result.json").read_text())
        assert cell["argv"] == result["argv"], cell["id"]
        assert cell["line"] == "VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 " + header[2:]
        at = lines.index(next(ln for ln in lines if ln.startswith(cell["id"] + " ")))
        assert lines[at + 1] == "  $ " + cell["line"]
        assert cell["unknown"] == []
        if cell["workload"] == "tput":
            assert "--random-input-len" in result["argv"]  # 0.25 and 0.26 both spell it so
    assert res.exit_code == 0, res.output
