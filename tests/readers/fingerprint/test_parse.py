"""Fingerprints from run logs: older and newer spellings of every line, and the diff that
generates the B200/H200 ablation's "ruled out so far" table."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app
from vllmdiag.readers.fingerprint import fingerprint_diff, fingerprint_file, parse_lines

LOGS = FIXTURES / "logs"
P = "(EngineCore_DP0 pid=1) INFO 09-21 05:10:09 [x.py:1] "
OLD = "INFO 02-09 15:20:07 gpu_model_runner.py:918] "

CASES: list[tuple[str, str, Any]] = [
    # (field, line, value) -- each field at least in an older and a newer spelling
    ("vllm_version", P + "Initializing a V1 LLM engine (v0.26.0) with config: model='m'", "0.26.0"),
    (
        "vllm_version",
        "INFO 09-21 05:10:03 [api_server.py:1] vLLM API server version 0.18.0",
        "0.18.0",
    ),
    (
        "attention_backend",
        P + "Using FLASH_ATTN attention backend out of potential backends: "
        "['FLASH_ATTN', 'TRITON_ATTN']",
        "FLASH_ATTN",
    ),
    ("attention_backend", P + "Using AttentionBackendEnum.TRITON_ATTN backend.", "TRITON_ATTN"),
    ("attention_backend", OLD + "Using Flash Attention backend on V1 engine.", "FLASH_ATTN"),
    ("attention_backend", OLD + "Using FlashInfer backend.", "FLASHINFER"),
    (
        "mm_encoder_attention_backend",
        P + "Using AttentionBackendEnum.FLASH_ATTN for MMEncoderAttention.",
        "FLASH_ATTN",
    ),
    (
        "mm_encoder_attention_backend",
        P + "Using default backend AttentionBackendEnum.TORCH_SDPA for vit attention",
        "TORCH_SDPA",
    ),
    (
        "moe_backend",
        P + "Using 'FLASHINFER_TRTLLM' Fp8 MoE backend out of potential backends: "
        "['AITER', 'TRITON']",
        "FLASHINFER_TRTLLM",
    ),
    (
        "moe_backend",
        P + "Using FLASHINFER_TRTLLM Fp8 MoE backend out of potential backends: "
        "['AITER','FLASHINFER_TRTLLM']",
        "FLASHINFER_TRTLLM",
    ),
    (
        "moe_backend",
        P + "Using TRITON Unquantized MoE backend out of potential backends: ['TRITON']",
        "TRITON",
    ),
    (
        "moe_backend",
        P + "Using FlashInfer TRTLLM backend for Unquantized MoE",
        "FLASHINFER_TRTLLM",
    ),
    ("moe_backend", P + "Using TRITON backend for Unquantized MoE", "TRITON"),
    (
        "moe_backend",
        P + "Using FlashInfer CUTLASS Unquantized MoE backend out of potential backends: "
        "['TRITON', 'FlashInfer CUTLASS']",
        "FLASHINFER_CUTLASS",
    ),
    (
        "prepare_finalize",
        P + "Using MoEPrepareAndFinalizeNoDPEPModular",
        "MoEPrepareAndFinalizeNoDPEPModular",
    ),
    (
        "moe_sm_split",
        "[2026-08-20 17:22:25.251] [info] TRT-LLM fused MoE cooperative launch SM "
        "allocation: 144 SMs used for MoE, 8 SMs reserved for overlapping kernels (total SMs: 152)",
        "144 SMs used for MoE, 8 reserved",
    ),
    ("kv_cache_tokens", P + "GPU KV cache size: 2,173,456 tokens", 2173456),
    # 0.29 prints both on one line
    (
        "max_concurrency",
        P + "GPU KV cache size: 879,888 tokens, Maximum concurrency for 16,384 tokens per "
        "request: 6.71x",
        6.71,
    ),
    (
        "kv_cache_tokens",
        P + "GPU KV cache size: 879,888 tokens, Maximum concurrency for 16,384 tokens per "
        "request: 6.71x",
        879888,
    ),
    ("attention_backend", P + "Using CPU_MLA backend.", "CPU_MLA"),
    ("kv_cache_tokens", OLD + "GPU KV cache size: 38736 tokens", 38736),
    ("max_concurrency", P + "Maximum concurrency for 16,384 tokens per request: 128.64x", 128.64),
    ("max_concurrency", OLD + "Maximum concurrency for 32768 tokens per request: 4.00x", 4.0),
    (
        "max_num_batched_tokens",
        OLD + "Chunked prefill is enabled with max_num_batched_tokens=8192.",
        8192,
    ),
    ("chunked_prefill", P + "Chunked prefill is enabled with max_num_batched_tokens=16384.", True),
    (
        "chunked_prefill",
        P + "Initializing a V1 LLM engine (v0.9.2) with config: model='m', "
        "chunked_prefill_enabled=True",
        True,
    ),
    ("cuda_graphs", P + "Graph capturing finished in 12 secs, took 0.54 GiB", "graphs"),
    (
        "cuda_graphs",
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##| 67/67",
        "graphs",
    ),
    ("cuda_graphs", P + "Enforce eager set, disabling torch.compile and CUDAGraphs.", "eager"),
    ("cuda_graphs", OLD + "Cudagraph is disabled under eager mode", "eager"),
    (
        "enforce_eager",
        P + "Initializing a V1 LLM engine (v0.18.0) with config: model='m', "
        "enforce_eager=True, kv_cache_dtype=auto",
        True,
    ),
    (
        "encoder_cache_budget",
        OLD + "Encoder cache will be initialized with a budget of 32767 "
        "tokens, and profiled with 2 image items of the maximum feature size.",
        32767,
    ),
    (
        "omp_num_threads",
        P + "Reducing Torch parallelism from 192 threads to 1 to avoid "
        "unnecessary CPU contention. Set OMP_NUM_THREADS in the external environment",
        1,
    ),
    ("omp_num_threads", "env: OMP_NUM_THREADS=21", 21),
    (
        "unknown_env_vars",
        "WARNING 04-21 12:32:10 [envs.py:1744] Unknown vLLM environment "
        "variable detected: VLLM_USE_V1",
        ("VLLM_USE_V1",),
    ),
    (
        "plugins",
        "INFO 01-01 00:00:00 [__init__.py:45] - vllm_omni -> vllm_omni.plugin:register",
        ("vllm_omni",),
    ),
    (
        "plugins",
        "INFO 01-01 00:00:00 [__init__.py:36] name=vllm_omni, value=vllm_omni:reg",
        ("vllm_omni",),
    ),
    (
        "gpu_memory_utilization",
        "INFO 01-01 00:00:00 [utils.py:1] non-default args: "
        "{'model': 'm', 'gpu_memory_utilization': 0.5}",
        0.5,
    ),
    (
        "tensor_parallel_size",
        "INFO 01-01 00:00:00 [utils.py:1] non-default args: "
        "{'model': 'm', 'tensor_parallel_size': 4}",
        4,
    ),
]


@pytest.mark.parametrize(("field", "line", "value"), CASES)
def test_each_line_spelling(field: str, line: str, value: Any) -> None:
    assert getattr(parse_lines([line]), field) == value


def test_attention_line_is_not_the_encoder_line() -> None:
    fp = parse_lines([P + "Using AttentionBackendEnum.FLASH_ATTN for MMEncoderAttention."])
    assert fp.attention_backend is None
    assert fp.mm_encoder_attention_backend == "FLASH_ATTN"


def test_nothing_said_is_none() -> None:
    fp = parse_lines([P + "Starting to load model m..."])
    assert fp.kv_cache_tokens is None and fp.cuda_graphs is None and fp.plugins == ()


def test_the_ablation_s_ruled_out_table() -> None:
    a = fingerprint_file(LOGS / "fp_018_qwen3vl235b.log")
    b = fingerprint_file(LOGS / "fp_026_qwen3vl235b.log")
    status = {d.field: d.status for d in fingerprint_diff(a, b)}
    # ruled out: same encoder backend, same scheduling, same MoE backend name
    assert status["mm_encoder_attention_backend"] == "same"
    assert status["chunked_prefill"] == "same" and status["max_num_batched_tokens"] == "same"
    assert status["moe_backend"] == "same" and a.moe_backend == "FLASHINFER_TRTLLM"
    # what differs: routing (Modular vs Monolithic, SM split only on 0.26), KV by 0.9%
    assert (a.prepare_finalize, b.prepare_finalize) == (
        "MoEPrepareAndFinalizeNoDPEPModular",
        "MoEPrepareAndFinalizeNoDPEPMonolithic",
    )
    assert status["prepare_finalize"] == "different"
    assert (a.moe_sm_split, b.moe_sm_split) == (None, "140 SMs used for MoE, 8 reserved")
    assert (a.kv_cache_tokens, b.kv_cache_tokens) == (2_192_112, 2_173_456)
    assert (a.max_concurrency, b.max_concurrency) == (129.74, 128.64)
    assert b.unknown_env_vars == ("VLLM_ATTENTION_BACKEND", "VLLM_USE_V1")


def test_cli_fingerprint_and_diff() -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["fingerprint", str(LOGS / "fp_029_eager.log"), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["cuda_graphs"] == "eager" and data["vllm_version"] == "0.29.0"
    res = runner.invoke(
        app,
        [
            "fingerprint",
            "diff",
            str(LOGS / "fp_018_qwen3vl235b.log"),
            str(LOGS / "fp_026_qwen3vl235b.log"),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = {r["field"]: r for r in json.loads(res.stdout)["fields"]}
    assert rows["kv_cache_tokens"] == {
        "field": "kv_cache_tokens",
        "a": 2192112,
        "b": 2173456,
        "status": "different",
    }
    res = runner.invoke(app, ["fingerprint", "diff", str(LOGS / "fp_029_eager.log")])
    assert res.exit_code == 1
