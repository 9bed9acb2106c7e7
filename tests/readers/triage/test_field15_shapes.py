"""Readers and blame rules for what the fourteenth held-out corpus (``fixtures/logs/field15/``)
showed: pytest's one-line summary, the C++ runtime's report of an uncaught exception, a
builtin's name retyped with a space, frames and exception line with and without a prefix,
relays (PaddleX's worker, vLLM's chat template, a bare client status, a Python dict body,
Compose's exited container), glog's records with the year, and message families whose
words say whose the failure is. Each on a minimal excerpt of the real shape, and on the
fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause


def test_pytests_one_line_summary_is_the_tests_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "FAILED tests/v1/test_sampler.py::test_min_p[0.5-cuda] - AssertionError: "
        "expected 3 tokens, got 4\n",
    )
    assert (rc.type, rc.message, rc.evidence, rc.origin) == (
        "AssertionError",
        "expected 3 tokens, got 4",
        "exception-line",
        "unknown",
    )


def test_an_uncaught_cpp_exception_is_read_before_the_abort_it_causes(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "terminate called after throwing an instance of 'std::length_error'\n"
        "  what():  vector::reserve\n"
        "Aborted (core dumped)\n",
    )
    assert (rc.type, rc.message, rc.evidence) == (
        "std::length_error",
        "vector::reserve",
        "exception-line",
    )


def test_a_builtins_name_retyped_with_a_space_is_the_type(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Import Error: cannot import name 'select_experts' from partially initialized module "
        "'vllm_ascend.ops.experts' (most likely due to a circular import)\n",
    )
    assert (rc.type, rc.evidence, rc.origin, rc.known) == (
        "Import Error",
        "exception-line",
        "environment",
        "import-circular",
    )


def test_an_exception_line_that_lost_the_prefix_of_its_frames_is_theirs(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'ERROR 01-26 11:32:37 engine.py:380]   File "/x/vllm/vllm_flash_attn/iface.py", '
        "line 154, in flash_attn_varlen_func\n"
        "ERROR 01-26 11:32:37 engine.py:380]     out = torch.ops._vllm_fa2_C.varlen_fwd(\n"
        "AttributeError: '_OpNamespace' '_vllm_fa2_C' object has no attribute 'varlen_fwd'\n",
    )
    assert (rc.evidence, rc.origin) == ("traceback", "environment")


def test_an_untagged_frame_above_a_ranks_source_and_exception_is_theirs(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'File "/usr/lib/python3/site-packages/torch/nn/functional.py", line 2551, in embedding\n'
        "[rank0]:     return torch.embedding(weight, input)\n"
        "[rank0]: RuntimeError: Expected all tensors to be on the same device, but found at "
        "least two devices, cuda:3 and cuda:0!\n",
    )
    assert (rc.evidence, rc.process, rc.origin, rc.known) == (
        "traceback",
        "rank0",
        "unknown",
        "tensors-on-different-devices",
    )


def test_two_tagged_processes_do_not_lend_each_other_frames(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '(Worker_TP0 pid=1) File "/x/vllm/worker.py", line 3, in run\n'
        "(Worker_TP1 pid=2) RuntimeError: CUDA error: an illegal memory access was encountered\n",
    )
    assert (rc.process, rc.evidence) == ("Worker_TP1 pid=2", "exception-line")


@pytest.mark.parametrize(
    ("text", "typ", "message", "origin"),
    [
        # PaddleX's record of the error its VL worker's client got
        (
            "RuntimeError: Exception from the 'vlm' worker: Connection error.\n",
            "",
            "Connection error.",
            "unknown",
        ),
        # vLLM's server relaying a validation error of the request's messages
        (
            "ERROR 09-07 08:26:00 serving_chat.py:134] Error in applying chat template from "
            "request: 1 validation error for ValidatorIterator\n"
            "ERROR 09-07 08:26:00 serving_chat.py:134] 0.type\n"
            "ERROR 09-07 08:26:00 serving_chat.py:134]   Field required [type=missing]\n",
            "",
            "1 validation error for ValidatorIterator",
            "unknown",
        ),
        # the OpenAI JavaScript client's status, pasted without its label
        ("400 status code (no body)\n", "", "400 status code (no body)", "unknown"),
        # the body as Python prints the dict, without the status before it
        (
            "{'object': 'error', 'message': 'At most 1 image(s) may be provided in one "
            "request.', 'type': 'BadRequestError', 'param': None, 'code': 400}\n",
            "BadRequestError",
            "At most 1 image(s) may be provided in one request.",
            "config",
        ),
        # Docker Compose's record that the service's container exited
        (
            "dependency failed to start: container vllm-service exited (1)\n",
            "",
            "dependency failed to start: container vllm-service exited (1)",
            "unknown",
        ),
    ],
)
def test_relays_no_reader_knew(
    tmp_path: Path, text: str, typ: str, message: str, origin: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.message, rc.evidence, rc.origin) == (
        typ,
        message,
        "wrapper-message",
        origin,
    )


def test_a_glog_error_record_with_the_year_is_an_error_of_its_own(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "E20260106 06:43:02.966156  5793 transfer.cpp:820] Failed to connect to target: "
        "10.0.0.16:25482, status: 103900\n"
        "I20260106 06:43:03.100000  5793 transfer.cpp:900] retrying\n",
    )
    assert (rc.message, rc.evidence, rc.origin, rc.known) == (
        "Failed to connect to target: 10.0.0.16:25482, status: 103900",
        "exception-line",
        "unknown",
        "kv-transfer-peer-unreachable",
    )


@pytest.mark.parametrize(
    ("text", "known", "origin"),
    [
        (
            "NotImplementedError: No operator found for `memory_efficient_attention_forward` "
            "with inputs:\n",
            "xformers-no-operator",
            "environment",
        ),
        (
            "RuntimeError: Failed to load the tokenizer. If you are using a LLaMA-based model, "
            "use 'hf-internal-testing/llama-tokenizer' instead of the original tokenizer.\n",
            "tokenizer-load-failed-use-another",
            "config",
        ),
        (
            "ValueError: `rope_scaling` must be a dictionary with two fields, `type` and "
            "`factor`, got {'factor': 8.0, 'rope_type': 'llama3'}\n",
            "rope-scaling-newer-than-stack",
            "environment",
        ),
        (
            "AttributeError: 'BaichuanTokenizer' object has no attribute 'sp_model'\n",
            "model-tokenizer-lacks-attribute",
            "environment",
        ),
        (
            "RuntimeError: Error in function 'aligned_alloc' at allocator.h:49:\n"
            "  Buffer overflow when allocating memory for batch_prefill_tmp_v\n"
            "  Increase the workspace buffer size.\n",
            "flashinfer-workspace-too-small",
            "config",
        ),
        (
            "AttributeError: 'Gemma4UnifiedVisionConfig' object has no attribute "
            "'num_soft_tokens'\n",
            "model-subconfig-lacks-attribute",
            "environment",
        ),
        (
            "RuntimeError: NIXL is not available\n",
            "nixl-not-installed",
            "environment",
        ),
        (
            "TypeError: Unknown image model type: dots_ocr\n",
            "chat-placeholder-unknown-model-type",
            "environment",
        ),
        (
            "ImportError: DLL load failed while importing _C: The specified procedure could "
            "not be found.\n",
            "compiled-extension-load-failed",
            "environment",
        ),
        (
            "aiohttp.client_exceptions.ClientConnectorCertificateError: Cannot connect to host "
            "x.aliyuncs.com:443 ssl:True [SSLCertVerificationError: (1, '[SSL: "
            "CERTIFICATE_VERIFY_FAILED] certificate verify failed')]\n",
            "tls-certificate-verify-failed",
            "environment",
        ),
        (
            "BACKEND.VLLM backend only supports FORMAT.GPTQ: actual = qqq\n",
            "gptqmodel-backend-refuses-format",
            "config",
        ),
        (
            "RuntimeError: ACL stream synchronize failed, error code:507014\n",
            "ascend-stream-sync-failed",
            "unknown",
        ),
        (
            "[rank1]: EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error. "
            "Reason: [Create][DestLink]Create Dest error!\n",
            "cann-transport-init-error",
            "environment",
        ),
        (
            "Cannot find any of ['adapter_name_or_path'] in the model's quantization config.\n",
            "quantization-config-key-missing",
            "unknown",
        ),
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least "
            "two devices, cuda:0 and cuda:1!\n",
            "tensors-on-different-devices",
            "unknown",
        ),
    ],
)
def test_messages_that_say_whose_they_are(
    tmp_path: Path, text: str, known: str, origin: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.known, rc.origin) == (known, origin)


def test_one_of_vllm_ascends_own_classes_lacking_an_attribute_is_vllm_ascends(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path, "AttributeError: 'AscendRotaryEmbedding' object has no attribute 'cos_cached'\n"
    )
    assert (rc.origin, rc.package) == ("dependency", "vllm-ascend")


def test_ipex_llms_own_api_server_is_a_front_end_that_runs_vllm(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/ipex_llm/vllm/xpu/entrypoints/openai/'
        'api_server.py", line 43, in <module>\n'
        "    from vllm.entrypoints.openai.protocol import (LoadLoraAdapterRequest,\n"
        "ImportError: cannot import name 'LoadLoraAdapterRequest' from "
        "'vllm.entrypoints.openai.protocol'\n",
    )
    assert (rc.origin, rc.package) == ("caller", "ipex_llm")


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("vllm_34945_custom_logitsprocs_assertion.log", "exception-line", "unknown"),
        ("paddleocr_17308_std_length_error_abort.log", "exception-line", "unknown"),
        ("vllm-ascend_10756_select_experts_circular_import.log", "exception-line", "environment"),
        ("minicpm-v_800_vllm_fa2_varlen_fwd_missing.log", "traceback", "environment"),
        (
            "deep-learning-pytorch-huggingface_77_embedding_device_mismatch.log",
            "traceback",
            "unknown",
        ),
        ("paddleocr_16742_vlm_worker_connection_error.log", "wrapper-message", "unknown"),
        ("qwen3-vl_142_chat_template_validation_content_type.log", "wrapper-message", "unknown"),
        ("cline_396_400_status_code_no_body.log", "wrapper-message", "unknown"),
        ("qwen3-vl_155_at_most_1_image_per_request.log", "wrapper-message", "config"),
        ("genaiexamples_2068_vllm_service_exited.log", "wrapper-message", "unknown"),
        ("vllm-ascend_5635_mooncake_ascend_direct_connect_failed.log", "exception-line", "unknown"),
        (
            "vllm-ascend_3162_grpo_server_mode_hccl_transport_init.log",
            "exception-line",
            "environment",
        ),
        ("gptqmodel_1501_vllm_backend_qqq_format.log", "exception-line", "config"),
        ("ipex-llm_13124_load_lora_adapter_request_import.log", "traceback", "caller"),
        ("vllm-ascend_5385_rotary_cos_cached_missing.log", "exception-line", "dependency"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field15", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
