"""Readers and blame rules for what the eighteenth held-out corpus
(``fixtures/logs/field19/``) showed: uv's chain of causes and its resolver's report, a
sentence that says what ``failed with`` or that an error ``occurs``, an error a sentence
puts in backticks, an exception line in bold italics, grep's file name before a line, a
JSON log record's ``msg``, and new catalogue entries (quantizations vLLM does not split across
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


def test_uvs_resolver_report_is_read_at_its_first_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "VLLM_USE_PRECOMPILED=1 uv pip install -e  .\n"
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because xformers==0.0.32.post2 depends on torch==2.8.0 and vllm==0.11.1 "
        "depends on torch==2.9.0, we..\n",
    )
    assert (rc.type, rc.message, rc.origin) == (
        "",
        "No solution found when resolving dependencies:",
        "environment",
    )


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        (
            "When I run it on macOS I get an error: `module 'os' has no attribute "
            "'sched_getaffinity'`\n",
            "",
            "module 'os' has no attribute 'sched_getaffinity'",
        ),
        (
            "the container cannot run and an error occurs: OSError: Incorrect "
            "path_or_model_id: '/data1/models/x'.\n",
            "OSError",
            "Incorrect path_or_model_id: '/data1/models/x'.",
        ),
        (
            "    raise ValueError(\n**_ValueError: torch.bfloat16 is not supported for "
            "quantization method gptq._**\n",
            "ValueError",
            "torch.bfloat16 is not supported for quantization method gptq.",
        ),
    ],
)
def test_an_error_a_user_wrapped_in_words_or_markdown_is_read(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.message) == (typ, message)


def test_greps_file_name_before_vllms_prefix_is_peeled(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "node0.out:(Worker pid=2437300) ERROR 08-31 06:22:53 [multiproc_executor.py:944] "
        "torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /pg/0\n",
    )
    assert (rc.type, rc.process, rc.origin) == (
        "torch.distributed.DistStoreError",
        "Worker pid=2437300",
        "environment",
    )


def test_a_json_records_msg_at_error_level_relays_the_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '{"msg":"exec container process `/opt/venv/bin/vllm`: Exec format error",'
        '"level":"error","time":"2025-12-04T15:15:35.826445Z"}\n',
    )
    assert (rc.evidence, rc.message, rc.origin) == (
        "wrapper-message",
        "exec container process `/opt/venv/bin/vllm`: Exec format error",
        "environment",
    )


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
            "(EngineCore pid=10458) ERROR 08-09 09:58:19 [scheduler.py:1841] Unexpected: "
            "grammar rejected tokens [200028] for request chatcmpl-8d. Terminating request.\n",
            "unknown",
        ),
        (
            "expert_indices.size(1) == args->top_k (1 vs. 6) : expert_indices dim1 must "
            "match top_k.\n",
            "unknown",
        ),
        ("handling callback was invoked with status -3 (Input/output error)\n", "unknown"),
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
        ("vllm-metal_379_uv_no_torch_cpu_wheel_macos_x86.log", "exception-line", "environment"),
        ("vllm_19120_macos_cpu_sched_getaffinity.log", "exception-line", "environment"),
        ("llamafactory_3674_gptq_bfloat16_ray.log", "traceback", "config"),
        ("vllm_52907_multinode_gloo_store_wait_timeout.log", "exception-line", "environment"),
        ("vllm_30076_podman_cpu_image_arm64_exec_format.log", "wrapper-message", "environment"),
        ("vllm_8262_docker_incorrect_path_or_model_id.log", "exception-line", "config"),
        ("vllm_51693_inkling_grammar_rejected_tokens_500.log", "exception-line", "unknown"),
        ("vllm_51824_deepep_v2_trtllm_topk_check.log", "exception-line", "unknown"),
        ("dynamo_843_disagg_multi_prefill_ucx_io_error.log", "exception-line", "unknown"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field19", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
