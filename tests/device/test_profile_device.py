"""``vllmdiag profile`` on a real vLLM 0.26 leg and a GPU: baseline vs ``enforce-eager``.

Needs, and skips cleanly without:

- ``VLLMDIAG_VLLM_PYTHON``: a python with vLLM 0.26 installed (the leg is ``path:`` to it);
- ``VLLMDIAG_TINY_MODELS``: a directory with random-weight ``llama/`` (and ``moe/``);
- a GPU that this python's torch sees.

One workload (``vllm bench throughput`` on the tiny llama, random dataset, 8 prompts of
32 tokens in and 48 out) runs on two sides of one leg, each a cell of the recipe run
under the node lock through vLLM's own torch profiler (``--profile --profiler-config``):
two engine starts in all. The test reads only
vllmdiag's own ``--json``: at least 95 % (and at most 110 %) of the wall-clock gap
reconciled (the clock: the CPU's span of the traced engine steps), CUDA-graph replays
counted on the graph side, no kernel named by a return type. With
``VLLMDIAG_DEVICE_OUT`` set, one trace per side and the diff are copied there (to keep
as test fixtures).

    VLLMDIAG_VLLM_PYTHON=/venv/bin/python VLLMDIAG_TINY_MODELS=/models \\
        python -m pytest -m device tests/device/test_profile_device.py
    python tests/device/test_profile_device.py          # the same, standalone
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.device

REPO = Path(__file__).resolve().parents[2]
CAPTURE_TIMEOUT_S = 420  # one engine start (80-240 s there) plus the run
MAX_COPY_BYTES = 20 * 2**20
SIGNATURE_STARTS = ("void ", "std::", "typename ", "__global__", "auto ")


def _needs() -> tuple[Path, Path]:
    py, models = os.environ.get("VLLMDIAG_VLLM_PYTHON"), os.environ.get("VLLMDIAG_TINY_MODELS")
    if not py or not models:
        pytest.skip("set VLLMDIAG_VLLM_PYTHON and VLLMDIAG_TINY_MODELS to run on a GPU node")
    python, llama = Path(py), Path(models) / "llama"
    if not python.exists() or not llama.is_dir():
        pytest.skip(f"no python at {python} or no model at {llama}")
    probe = subprocess.run(
        [str(python), "-c", "import torch, vllm; print(torch.cuda.is_available(), "
         "vllm.__version__)"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if probe.returncode != 0 or not probe.stdout.startswith("True"):
        pytest.skip(f"no GPU visible to {python}: {(probe.stdout + probe.stderr)[-300:]}")
    return python, llama


def _recipe(tmp: Path, python: Path, llama: Path) -> Path:
    recipe = tmp / "tiny-llama-eager.yaml"
    command = [
        "vllm", "bench", "throughput", "--model", "{model}", "--dataset-name", "random",
        "--random-input-len", "32", "--random-output-len", "48", "--num-prompts", "8",
        "--max-model-len", "256", "--max-num-seqs", "8", "--seed", "0",
        "--output-json", "{out_dir}/throughput.json", "{flags}",
    ]  # fmt: skip
    recipe.write_text(
        "name: tiny-llama-eager\n"
        "question: where does enforce-eager move the decode time of a tiny llama?\n"
        f"legs:\n  vllm026:\n    path: {python}\n"
        "baseline:\n  leg: vllm026\n"
        "  env: {HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', VLLM_NO_USAGE_STATS: '1'}\n"
        "arms: [enforce-eager]\n"
        f"workloads:\n  tput:\n    model: {llama}\n    command: {json.dumps(command)}\n"
        f"timeout: {CAPTURE_TIMEOUT_S}\n"
    )
    return recipe


def _names(d: dict[str, Any]) -> list[str]:
    out = []
    for row in d["top"]:
        out += [row["name"], *row["a_names"], *row["b_names"]]
    for side in d["legs"]:
        out += [k["name"] for k in side["top_kernels"]]
    for op in d["ops"]:
        out += list(op["kernels"])
    return out


def _keep(run: dict[str, Any], diff_dir: Path) -> None:
    dest_env = os.environ.get("VLLMDIAG_DEVICE_OUT")
    if not dest_env:
        return
    dest = Path(dest_env)
    dest.mkdir(parents=True, exist_ok=True)
    for cap in run["captures"]:
        traces = sorted(Path(cap["out"]).glob("*.pt.trace.json*"), key=lambda p: p.stat().st_size)
        if traces and traces[0].stat().st_size <= MAX_COPY_BYTES:
            shutil.copy(traces[0], dest / f"{cap['leg']}.pt.trace.json.gz")
    for name in ("diff.json", "summary.md"):
        if (diff_dir / name).exists():
            shutil.copy(diff_dir / name, dest / name)


def test_baseline_vs_enforce_eager_on_vllm_026(tmp_path: Path) -> None:
    python, llama = _needs()
    from typer.testing import CliRunner

    from vllmdiag.cli.app import app
    from vllmdiag.readers.traces.cxxnames import is_signature

    recipe = _recipe(tmp_path, python, llama)
    args = ["profile", str(recipe), "--arms", "baseline", "enforce-eager", "--json"]
    res = CliRunner().invoke(app, [*args, "--runs-root", str(tmp_path / "runs"), "--top", "30"])
    assert res.exit_code == 0, res.output[-4000:]
    data = json.loads(res.stdout)
    caps = {c["leg"]: c for c in data["run"]["captures"]}
    assert caps["baseline"]["ok"] and caps["enforce-eager"]["ok"], caps
    # each side ran as a cell of the recipe, judged as a matrix cell is
    cells = {c["id"]: c["outcome"] for c in data["cells"]}
    assert cells == {"r1.baseline.tput.torch": "pass", "r1.enforce-eager.tput.torch": "pass"}
    assert "--profiler-config" in caps["baseline"]["notes"][0]
    d = data["diff"]
    _keep(data["run"], Path(data["run"]["out"]) / "diff")
    graph, eager = d["legs"]
    assert (graph["name"], eager["name"]) == ("baseline", "enforce-eager")
    # CUDA-graph replays are counted on the graph side, and only there
    assert graph["graph_kernels"] > 0, graph
    assert eager["graph_kernels"] == 0, eager
    # the traced GPU timeline accounts for the wall-clock gap (traced CPU step span)
    assert graph["wall_source"] == eager["wall_source"] == "traced CPU steps"
    # (at least 95 %; and not past 110 %, which would count time the clock never saw)
    assert d["explained"] is not None and 0.95 <= d["explained"] <= 1.10, d["reconciliation"]
    # every kernel is named by its function, never by a return type or a signature
    names = _names(d)
    assert names
    for name in names:
        for part in name.split(" ↔ "):
            for one in part.split(" + "):
                assert not one.startswith(SIGNATURE_STARTS), one
                assert not is_signature(one), one
    # the capture window (4 skipped, 32 captured by default) is long enough to judge:
    # step times on both sides with their step-to-step spread, eager's decode slower
    assert "delay_iterations=4, max_iterations=32" in caps["baseline"]["notes"][0]
    bands = {(r["measure"], r["kind"]): r for r in d["step_bands"]}
    period = bands[("step period", "decode-only")]
    assert period["a"]["n"] >= 8 and period["b"]["n"] >= 8, period
    assert period["call"] == "slower", period
    assert period["change"] > period["band"] >= 0.05
    print(next(s for s in d["reconciliation"].split(". ") if s.startswith("Median")))
    for side in (graph, eager):  # refused events are shown, not failed on: report them
        if side["skipped_events"]:
            print(f"{side['name']}: refused {side['skipped']}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(pytest.main([__file__, "-q", "-rs", "-p", "no:cacheprovider"]))
