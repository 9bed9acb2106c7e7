"""vllmdiag's readers on the real outputs of its device suite: vLLM 0.26.0 on an H200
(2026-12-01), a tiny random-weight Llama. The run directories under
``tests/fixtures/vllm026/`` are those the device tests wrote (``tests/device``); here the
verdicts, root causes, fingerprints, workload shapes, start-up timelines and the profile
diff are read again from them on the CPU, so a reader change that would misread a real
vLLM run fails CI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app
from vllmdiag.model.decide import decide
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.shape import ShapeAsked, WorkloadShape, shape_problem
from vllmdiag.model.verdict import ArmInfo
from vllmdiag.readers.fingerprint import fingerprint_diff, fingerprint_file
from vllmdiag.readers.fingerprint.startup import dominant
from vllmdiag.readers.traces.cxxnames import is_signature
from vllmdiag.readers.triage import triage_file
from vllmdiag.spine.rundir import load_result

REAL = FIXTURES / "vllm026"
KV = REAL / "kv-starved"
FAILING = ("r1.baseline.llama", "r1.enforce-eager.llama", "r1.attention-backend-env-triton.llama")


def _results(run: Path) -> list[CellResult]:
    return [load_result(json.loads(p.read_text())) for p in run.glob("cells/*/result.json")]


@pytest.mark.parametrize("cell", FAILING)
def test_the_starved_kv_cache_is_vllms_own_check_of_the_users_settings(cell: str) -> None:
    root = triage_file(KV / "cells" / cell / "log.txt").root_cause
    assert root is not None
    assert root.type == "ValueError"
    assert root.message.startswith("No available memory for the cache blocks")
    assert root.process.startswith("EngineCore")
    # raised in vLLM's engine core, but it is vLLM telling the user to change a setting
    assert root.raised_in == "vllm" and root.evidence == "traceback"
    assert root.origin == "config" and "gpu-memory-utilization" in root.why
    assert root.known == "kv-cache-too-small"
    # the message says "Try increasing gpu_memory_utilization": the next step raises it
    assert root.next_step == "vllmdiag arms show gpu-memory-utilization-0.95"
    assert "RuntimeError: Engine core initialization failed" not in root.signature


def test_the_verdict_of_the_real_run_is_decided_again_the_same_way() -> None:
    recorded = json.loads((KV / "verdict.json").read_text())
    effects = {a["name"]: a["effect"] for a in recorded["arms"]}
    assert effects == {
        "gpu-memory-utilization-0.5": "sufficient",
        "enforce-eager": "ruled_out",
        "attention-backend-env-triton": "inert",
    }
    arms = [ArmInfo(name, "flag") for name in effects]
    inert = {"attention-backend-env-triton": "vllm 0.26.0 ignores this arm"}
    again = decide(arms, ["llama"], _results(KV), inert=inert)
    assert {a.name: a.effect.value for a in again.arms} == effects


def test_fingerprints_of_the_real_logs_say_what_each_cell_did() -> None:
    ok = fingerprint_file(KV / "cells/r1.gpu-memory-utilization-0.5.llama/log.txt")
    eager = fingerprint_file(KV / "cells/r1.enforce-eager.llama/log.txt")
    assert ok.vllm_version == "0.26.0"
    assert ok.attention_backend == "FLASH_ATTN"
    assert ok.kv_cache_tokens == 36_398_800
    assert ok.cuda_graphs == "graphs" and eager.cuda_graphs == "eager"
    assert ok.gpu_memory_utilization == 0.5
    env = fingerprint_file(KV / "cells/r1.attention-backend-env-triton.llama/log.txt")
    assert "VLLM_ATTENTION_BACKEND" in env.unknown_env_vars  # why that arm is inert
    diffs = {d.field: d.status for d in fingerprint_diff(ok, eager)}
    assert diffs["cuda_graphs"] == "different" and diffs["attention_backend"] == "same"


def test_the_real_start_up_is_dominated_by_the_sampler_jit_and_says_why() -> None:
    fp = fingerprint_file(KV / "cells/r1.gpu-memory-utilization-0.5.llama/log.txt")
    t = fp.startup
    assert t is not None and t.ready and t.from_process_start
    assert t.reported_init_s == 131.05
    phases = {p.name: p.seconds for p in t.phases}
    assert phases["imports (before vLLM's first log line)"] == 28
    assert phases["sampler warm-up (kernel JIT builds)"] == 106
    manifest = json.loads((KV / "manifest.json").read_text())
    findings = [
        (f["code"], f["message"])
        for f in manifest["hygiene"]["v026"]["findings"]
        if f["severity"] == "warning"
    ]
    top = dominant(t, findings)
    assert top is not None and top.phase.name == "sampler warm-up (kernel JIT builds)"
    assert top.explanation is not None and "flashinfer-jit-cache" in top.explanation
    recorded = json.loads(
        (KV / "cells/r1.gpu-memory-utilization-0.5.llama/result.json").read_text()
    )["run_fingerprint"]["startup_dominant"]
    assert recorded["seconds"] == 106.0 and recorded["explanation"] == top.explanation


def test_the_real_workload_shapes_are_checked_against_what_was_asked() -> None:
    shape = REAL / "shape" / "cells"
    asked = ShapeAsked(num_prompts=64, input_len=128, output_len=32)
    for cell, wrong in (("r1.baseline.builtin", False), ("r1.baseline.plain-spelling", True)):
        fp = fingerprint_file(shape / cell / "log.txt")
        bench = json.loads((shape / cell / "out" / "throughput.json").read_text())
        assert fp.workload is not None
        got = WorkloadShape(
            bench["num_requests"],
            fp.workload.prompt_tokens,
            fp.workload.output_tokens,
            fp.workload.stated_mismatch,
        )
        problem = shape_problem(asked, got)
        assert (problem is not None) is wrong, (cell, problem)
    builtin = fingerprint_file(shape / "r1.baseline.builtin" / "log.txt").workload
    assert builtin is not None and builtin.prompt_tokens == 8_200 and builtin.stated_mismatch == 8
    result = json.loads((shape / "r1.baseline.plain-spelling" / "result.json").read_text())
    assert result["outcome"] == "error"
    assert "65,542 prompt tokens (1,024 per prompt) where 128 per prompt" in result["reason"]


def test_a_prompt_longer_than_the_model_allows_is_read_from_the_benchmark() -> None:
    root = triage_file(REAL / "prompt-too-long.log").root_cause
    assert root is not None and root.type == "AssertionError"
    assert root.message.startswith("Please ensure that max_model_len is greater than")
    assert root.origin == "config" and "max-model-len" in root.why


def test_the_sigterm_run_was_journaled_as_interrupted() -> None:
    events = [json.loads(x) for x in (REAL / "sigterm" / "run.jsonl").read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[-3:] == ["cell_spawned", "cell_interrupted", "run_finished"]
    assert events[-1]["status"] == "interrupted"


def test_the_real_profile_pair_reconciles_the_wall_clock_gap(tmp_path: Path) -> None:
    run = tmp_path / "profile"
    shutil.copytree(REAL / "profile", run)
    res = CliRunner().invoke(app, ["profile", "diff", str(run), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    graph, eager = d["legs"]
    assert (graph["name"], eager["name"]) == ("baseline", "enforce-eager")
    assert graph["graph_kernels"] > 0 and eager["graph_kernels"] == 0
    assert 0.95 <= d["explained"] <= 1.10, d["reconciliation"]
    names = [row["name"] for row in d["top"]]
    assert names and not any(is_signature(n) or n.startswith(("void ", "std::")) for n in names)
    paired = [row for row in d["top"] if row["a_names"] != row["b_names"]]
    assert paired  # kernels of different names doing one op, paired by their op


def test_the_end_to_end_device_profile_reads_the_same_on_the_cpu(tmp_path: Path) -> None:
    """``tests/device/test_profile_device.py`` passed on the H200 (vLLM 0.26.0) and kept
    one trace per side and its diff; diffing those two trace files here gives the same
    reconciliation, sides named by their files."""
    e2e = REAL / "profile-e2e"
    device = json.loads((e2e / "diff.json").read_text())
    args = [str(e2e / "baseline.pt.trace.json.gz"), str(e2e / "enforce-eager.pt.trace.json.gz")]
    args += ["--out", str(tmp_path / "d"), "--json"]
    res = CliRunner().invoke(app, ["profile", "diff", *args])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert [side["name"] for side in d["legs"]] == ["baseline", "enforce-eager"]
    assert [side["graph_kernels"] for side in d["legs"]] == [552, 0]
    assert d["wall_delta_us"] == pytest.approx(device["wall_delta_us"])
    assert d["explained"] == pytest.approx(device["explained"]) and d["explained"] >= 0.95
    assert not any(row["op"].isdigit() for row in d["ops"])  # triton_poi_fused_3 names no op


@pytest.mark.parametrize("run", ["kv-starved", "shape"])
def test_matrix_verdict_regenerates_the_real_runs_from_their_files(
    run: str, tmp_path: Path
) -> None:
    copy = tmp_path / run
    shutil.copytree(REAL / run, copy)
    result = CliRunner().invoke(app, ["matrix", "verdict", str(copy), "--json"])
    assert result.exit_code == 0, result.output
    again = json.loads(result.stdout)
    recorded = json.loads((REAL / run / "verdict.json").read_text())
    assert {a["name"]: a["effect"] for a in again["arms"]} == {
        a["name"]: a["effect"] for a in recorded["arms"]
    }
    if run == "kv-starved":  # pass/fail: the same table and verdict as when it ran on the H200

        def head(path: Path) -> str:
            text = path.read_text()
            return text[: text.index("## Arms")]

        assert head(copy / "summary.md") == head(REAL / run / "summary.md")
        assert again["noise"] == {}
    else:  # one timed pass: no noise estimate, so nothing could be called
        assert again["noise"]["builtin"]["value"] is None
        assert "run with --repeats 3" in (copy / "summary.txt").read_text()
