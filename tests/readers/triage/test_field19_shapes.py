"""Readers and blame rules for what the eighteenth held-out corpus
(``fixtures/logs/field19/``) showed: uv's chain of causes, a sentence that says what
``failed with``, and new catalogue entries (quantizations vLLM does not split across
ranks, pipeline parallelism for a model without it, a setting headless mode refuses, a
KV-cache dtype that does not take the checkpoint's scales, request options a model does
not take, a weight vLLM's loader does not place, a distributed store's timeout, a TLS
handshake, a binary for another architecture, pip finding no version, ``CUDA_HOME``
unset) and vLLM's speculative-decoding classes. Each on a minimal excerpt of the real
shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause


def test_uvs_chain_is_read_at_its_last_cause(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "  × Failed to download and build `vllm @ git+https://github.com/x/vllm.git`\n"
        "  ├─▶ Failed to fetch: `https://download.pytorch.org/whl/cu130/torch/`\n"
        "  ├─▶ client error (Connect)\n"
        "  ╰─▶ tls handshake eof\n",
    )
    assert (rc.type, rc.message, rc.origin) == ("", "tls handshake eof", "environment")


def test_a_sentence_that_says_what_failed_with_names_the_exception(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "But it failed with AttributeError: '_OpNamespace' '_C' object has no attribute "
        "'awq_marlin_repack'\n",
    )
    assert (rc.type, rc.origin) == ("AttributeError", "environment")
    assert rc.message.startswith("'_OpNamespace' '_C' object")


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        ("ValueError: GGUF quantization hasn't supported tensor parallelism yet.\n", "config"),
        ("ValueError: BitAndBytes quantization with TP or PP is not supported yet.\n", "config"),
        (
            "NotImplementedError: Pipeline parallelism is only supported for the following  "
            "architectures: ['LlamaForCausalLM']\n",
            "config",
        ),
        ("ValueError: data_parallel_rank is not applicable in headless mode\n", "config"),
        (
            "ValueError: fp8_e5m2 kv-cache is not supported with checkpoint KV scales\n",
            "config",
        ),
        ("ValueError: Unexpected weight: visual.blocks.0.attn.proj.weight\n", "vllm"),
        ("AttributeError: 'EagleProposer' object has no attribute 'positions'\n", "vllm"),
        (
            "torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: "
            "/default_pg/0//cpu//0/2\n",
            "environment",
        ),
        (
            '{"msg":"exec container process `/opt/venv/bin/vllm`: Exec format error",'
            '"level":"error"}\n',
            "environment",
        ),
        (
            "ERROR: Could not find a version that satisfies the requirement vllm==0.12.0\n",
            "environment",
        ),
        ("AssertionError: CUDA_HOME is not set\n", "environment"),
    ],
)
def test_new_catalogue_entries_blame_as_the_message_says(
    tmp_path: Path, text: str, origin: str
) -> None:
    assert cause(tmp_path, text).origin == origin


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("dflash_93_uv_git_build_tls_eof.log", "exception-line", "environment"),
        ("vllm-gfx906_18_awq_marlin_repack_missing_op.log", "exception-line", "environment"),
        ("vllm_30065_aarch64_no_vllm_0_12_wheel.log", "exception-line", "environment"),
        ("vllm_7662_gguf_tp_not_supported_ray.log", "exception-line", "config"),
        ("vllm_9015_mllama_pp_not_supported_architectures.log", "exception-line", "config"),
        ("vllm_9894_awq_marlin_unexpected_visual_weight.log", "exception-line", "vllm"),
        ("vllm_34607_eagleproposer_no_positions.log", "exception-line", "vllm"),
        ("tt-xla_2338_tt_vllm_wheel_cuda_home_not_set.log", "exception-line", "environment"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field19", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
