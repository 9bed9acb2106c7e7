"""Readers and blame rules for what the twenty-fifth held-out corpus
(``fixtures/logs/field26/``, 75 logs) showed: ptxas's diagnostics as its own lines,
argparse's refusal quoted in a sentence, a client's status with the server's message, a
gRPC status, a body nested in another's message or cut by a UI, a line in a Python
string's quotes; whose fault by what failed (the device lacking what was asked, a
library's internal error, ptxas refusing Triton's PTX) and new catalogue entries. Each on
a minimal excerpt of the real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause


def test_ptxas_diagnostics_are_ptxas_own_lines(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "triton-3.4.0:\n"
        "ptxas /tmp/tmpaj0u6ubt.ptx, line 57; error : Modifier '.evict_last' on 'ld' requires "
        ".target sm_70 or higher\n"
        "ptxas fatal : Ptx assembly aborted due to errors\n",
    )
    assert (rc.process, rc.evidence) == ("ptxas", "exception-line")
    assert rc.message == "Modifier '.evict_last' on 'ld' requires .target sm_70 or higher"
    assert (rc.origin, rc.package) == ("dependency", "triton"), rc.why


def test_ptxas_not_knowing_the_gpu_is_the_toolchain(tmp_path: Path) -> None:
    rc = cause(tmp_path, "ptxas fatal   : Value 'sm_110a' is not defined for option 'gpu-name'\n")
    assert (rc.process, rc.origin) == ("ptxas", "environment")


@pytest.mark.parametrize(
    "text",
    [
        "Passing the old flag fails with `vllm: error: unrecognized arguments: "
        "--disable-log-requests` (see CI).\n",
        "2.报错：“vllm:error:unrecognized arguments:--enable-reason”\n",
    ],
)
def test_argparses_refusal_quoted_in_a_sentence_is_a_refused_command_line(
    tmp_path: Path, text: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.process, rc.origin) == ("cli-error", "vllm", "config")
    assert rc.message.startswith("unrecognized arguments:")


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        (
            "[slices2Columns] embed failed, error, status code: 400, status: 400 Bad Request, "
            'message: Model "bge-large-zh-v1.5" does not support matryoshka representation\n',
            "",
            'Model "bge-large-zh-v1.5" does not support matryoshka representation',
        ),
        (
            "\"rpc error: code = Unimplemented desc = Unexpected <class 'NotImplementedError'>: "
            "Method not implemented!\n",
            "NotImplementedError",
            "Method not implemented!",
        ),
        (
            '● Error: LLM error: {"message":"{\\"error\\":{\\"message\\":\\"max_tokens must be '
            'at least 1, got -17032.\\",\\"type\\":\\"BadRequestError\\",\\"code\\":400}}"}\n',
            "BadRequestError",
            "max_tokens must be at least 1, got -17032.",
        ),
    ],
)
def test_a_clients_record_gives_the_servers_error(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.type, rc.message) == ("wrapper-message", typ, message)


def test_a_body_a_ui_cut_gives_its_messages_first_line() -> None:
    from vllmdiag.readers.triage.httperrors import parsed_body

    assert parsed_body('{"error":{"message":"3 validation errors:\\n {\'type\'...') == (
        "",
        "3 validation errors:",
    )


def test_a_line_in_a_python_strings_quotes_is_the_message_inside(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "'No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
        "when initializing the engine.'\n",
    )
    assert rc.message.startswith("No available memory for the cache blocks.")
    assert not rc.message.endswith("'")


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        (
            "docker: Error response from daemon: unknown or invalid runtime name: nvidia\n",
            "environment",
        ),
        ("exec /usr/local/bin/python3: exec format error\n", "environment"),
        (
            "Error: INSTALLATION FAILED: unable to build kubernetes objects from release "
            'manifest: [resource mapping not found for name: "x" namespace: "" from "": no '
            'matches for kind "VirtualService" in version "networking.istio.io/v1alpha3"\n',
            "environment",
        ),
        (
            "RuntimeError: Found Tesla P40 which is too old to be supported by the triton GPU "
            "compiler, which is used as the backend. Triton only supports devices of CUDA "
            "Capability >= 7.0, but your device is of CUDA capability 6.1\n",
            "environment",
        ),
        (
            "TypeError: Can't instantiate abstract class TPUExecutor with abstract method "
            "pin_lora\n",
            "vllm",
        ),
        (
            "RuntimeError: The device doesn't support querying the available free memory.\n",
            "environment",
        ),
        (
            "RuntimeError: Device type HPU is not supported for torch.Generator() api.\n",
            "environment",
        ),
        (
            "RuntimeError: Error in function 'Dispatched' at /x/flashinfer/prefill.cuh:3759: "
            "FlashInfer Internal Error: Invalid configuration : NUM_MMA_Q=1 please create an "
            "issue and report the issue to the developers.\n",
            "dependency",
        ),
        ("ValueError: Cannot request more than 5 logprobs.\n", "config"),
        ("BadRequestError: facebook/opt-125m is not a multimodal model None\n", "config"),
    ],
)
def test_new_entries_and_words_blame_as_the_message_says(
    tmp_path: Path, text: str, origin: str
) -> None:
    assert cause(tmp_path, text).origin == origin


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("triton_8096_thor_ptxas_sm110a.log", "exception-line", "environment"),
        ("pascal-pkgs-ci_46_triton340_ptxas_evict_last_sm70.log", "exception-line", "dependency"),
        ("vllm_15511_ptxas_evict_last_cg_modifier.log", "exception-line", "dependency"),
        ("inferencex_1371_disable_log_requests_removed.log", "cli-error", "config"),
        ("coze-studio_838_bge_large_zh_matryoshka_dimensions_400.log", "wrapper-message", "config"),
        ("localai_3435_vllm_embeddings_rpc_unimplemented.log", "wrapper-message", "unknown"),
        ("shai_97_gpt_oss_max_tokens_negative_nested_body.log", "wrapper-message", "config"),
        ("vllm_7028_colab_t4_awq_gpu_mem_util_0_1_no_cache_blocks.log", "exception-line", "config"),
        ("aibrix_2054_vllm_mock_exec_format_error.log", "exception-line", "environment"),
        ("llm-engine_36_helm_install_istio_crds_missing.log", "exception-line", "environment"),
        ("pascal-pkgs-ci_23_p40_too_old_for_triton.log", "exception-line", "environment"),
        ("vllm_5760_tpu_executor_abstract_pin_lora.log", "exception-line", "vllm"),
        ("vllm_35273_xpu_tbx_mem_get_info_unsupported.log", "traceback", "environment"),
        ("vllm-fork_246_hpu_seed_torch_generator_unsupported.log", "exception-line", "environment"),
        (
            "flashinfer_3621_prefill_invalid_configuration_sm75_fp8kv.log",
            "exception-line",
            "dependency",
        ),
        (
            "lm-evaluation-harness_1735_cannot_request_more_than_5_logprobs.log",
            "wrapper-message",
            "config",
        ),
        ("dots.ocr_61_opt125m_not_multimodal_image_url.log", "exception-line", "config"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field26", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)


def test_earlier_corpora_that_read_differently_now() -> None:
    # field22's ptxas refusing bf16 under Triton's codegen error: Triton's, as read by hand
    rc = fixture_cause("field22", "vllm_2453_fused_moe_t4_ptx_bf16_sm80.log")
    assert (rc.origin, rc.package) == ("dependency", "triton")
    # field24's vLLM worker class missing an abstract method: vLLM's
    rc = fixture_cause("field24", "vllm_6269_neuronworker_abstract_execute_worker.log")
    assert rc.origin == "vllm"
