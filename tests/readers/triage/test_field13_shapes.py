"""Readers and blame rules for what the twelfth held-out corpus (``fixtures/logs/field13/``)
showed: errors named in users' sentences, clients' records of a server's status and body in
more shapes, a traceback escaped into one string, the same handled error recurring, a C++
exception type, pytest's report, and message families no entry knew. Each on a minimal
excerpt of the real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause, no_cause


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        (
            "I have attempted to deploy the model however there is an attribute error: "
            "AttributeError: 'InternVLChatConfig' object has no attribute 'hidden_size'\n",
            "AttributeError",
            "'InternVLChatConfig' object has no attribute 'hidden_size'",
        ),
        (
            "I keep hitting this error “ openai_harmony.HarmonyError: unexpected tokens "
            "remaining in message header”\n",
            "openai_harmony.HarmonyError",
            "unexpected tokens remaining in message header",
        ),
        (
            "[Bug]: I used vllm=0.4.1, I meet the bug RuntimeError: t == DeviceType::CUDA "
            'INTERNAL ASSERT FAILED at "CUDAGuardImpl.h":25, please report a bug to PyTorch.\n',
            "RuntimeError",
            't == DeviceType::CUDA INTERNAL ASSERT FAILED at "CUDAGuardImpl.h":25, please '
            "report a bug to PyTorch.",
        ),
        (
            "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8\n"
            "# Error: RuntimeError: MXFP4 quantization is not supported on gfx942\n",
            "RuntimeError",
            "MXFP4 quantization is not supported on gfx942",
        ),
        (
            "  **ValueError: Bfloat16 is only supported on GPUs with compute capability of at "
            "least 8.0.**\n",
            "ValueError",
            "Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
        ),
    ],
)
def test_an_error_a_user_names_in_a_sentence_or_comment_keeps_its_type(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.message, rc.evidence) == (typ, message, "exception-line")


def test_a_module_path_is_no_users_word_for_an_error(tmp_path: Path) -> None:
    # ``ray.exceptions.ActorDiedError``: ``exceptions`` is no sentence's "exception"
    note = no_cause(
        tmp_path,
        "U | 2025-07-18 | worker | ray.exceptions.ActorDiedError: The actor died because of "
        "an error raised in its creation task, ray::X.__init__() (pid=5)\n",
    )
    assert note.startswith("unknown")


@pytest.mark.parametrize(
    ("text", "typ", "message", "process"),
    [
        (
            "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': "
            "'Unknown model type: llama'...}\n",
            "",
            "Unknown model type: llama",
            "main",
        ),
        (
            "2025-02-08T10:57:38.866174Z ERROR goose::agents::truncate: Error: Request failed: "
            "Request failed with status: 422 Unprocessable Entity\n",
            "",
            "Request failed: Request failed with status: 422 Unprocessable Entity",
            "main",
        ),
        (
            "Server error: 400 - [address=0.0.0.0:43205, pid=3456771] Model architectures "
            "['Qwen2_5_VLForConditionalGeneration'] failed to be inspected.\n",
            "",
            "[address=0.0.0.0:43205, pid=3456771] Model architectures",
            "main",
        ),
        (
            "认证失败：headers: {'server': 'uvicorn'}, status_code: 404, body: {'detail': "
            "'Not Found'}\n",
            "",
            "Not Found",
            "main",
        ),
        (
            '■ {"error":{"cause":"","code":400,"message":"{\\"code\\":404,\\"type\\":\n'
            '\\"NOT_FOUND\\",\\"message\\":\\"model qwen3-vl-235 not found\\",\\"cause\\":null,\n'
            '\\"details\\":null}","status":"FAILED_RESPONSE"}}\n',
            "",
            "model qwen3-vl-235 not found",
            "main",
        ),
        (
            'The UI outputs the error "ERROR: 400 status code (no body)".\n',
            "",
            "400 status code (no body)",
            "main",
        ),
        (
            "Deployment failed\n"
            "ERROR: (gcloud.beta.run.deploy) The user-provided container failed to start and "
            "listen on the port defined provided by the PORT=8000 environment variable.\n",
            "",
            "The user-provided container failed to start",
            "gcloud.beta.run.deploy",
        ),
        (
            '"dependency failed to start: container app-vllm-1 is unhealthy"\n',
            "",
            "dependency failed to start: container app-vllm-1 is unhealthy",
            "main",
        ),
        (
            "2023-12-26 10:46:44,855 - utils.py[line:25] - ERROR: SyntaxError: Caught "
            "exception: invalid syntax (<string>, line 2)\n",
            "SyntaxError",
            "invalid syntax (<string>, line 2)",
            "main",
        ),
        (
            "error: [AskController] Error handling request fetch failed\n"
            "error: [handleAbortError] AI response error; aborting request: fetch failed\n",
            "",
            "fetch failed",
            "main",
        ),
        (
            "Error retrieving file list: cannot import name '_try_login' from "
            "'modelscope.utils.hf_util'\n",
            "",
            "cannot import name '_try_login' from 'modelscope.utils.hf_util'",
            "main",
        ),
    ],
)
def test_a_relay_gives_the_error_it_relays(
    tmp_path: Path, text: str, typ: str, message: str, process: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.evidence, rc.process) == (typ, "wrapper-message", process)
    assert rc.message.startswith(message), rc.message


def test_googles_client_raising_a_services_status_relays_the_services_words() -> None:
    rc = fixture_cause("field13", "vertex-ai-samples_3443_model_server_exited.log")
    assert (rc.type, rc.evidence, rc.origin) == ("FailedPrecondition", "wrapper-message", "unknown")
    assert rc.message.startswith("400 Model server exited unexpectedly.")


def test_the_servers_own_record_beats_a_clients_relay_of_it(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'Error: API error 400: {"error":{"message":"Expecting \',\' delimiter: line 1 column '
        '109 (char 108)","type":"BadRequestError","param":"","code":400}}\n'
        "(APIServer pid=267) ERROR:    Exception in ASGI application\n"
        "(APIServer pid=267) Traceback (most recent call last):\n"
        "........\n"
        "\n"
        "(APIServer pid=267) json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 "
        "column 122 (char 121).\n",
    )
    assert (rc.type, rc.process) == ("json.decoder.JSONDecodeError", "APIServer pid=267")


def test_a_traceback_escaped_into_one_string_keeps_its_frames() -> None:
    rc = fixture_cause("field13", "vllm_5819_swift_step_parent_seq_keyerror.log")
    assert (rc.type, rc.message, rc.evidence, rc.origin) == (
        "KeyError",
        "1597",
        "traceback",
        "vllm",
    )


def test_the_same_error_recurring_is_read_where_its_frames_are() -> None:
    rc = fixture_cause("field13", "vllm_22519_gpt_oss_harmony_unexpected_token_200007.log")
    assert (rc.evidence, rc.process) == ("traceback", "APIServer pid=1")
    assert rc.message == "Unexpected token 200007 while expecting start token 200006"


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        (  # a C++ exception type, its message on the line below
            "c10::AcceleratorError:\nCUDA error: unspecified launch failure\n",
            "c10::AcceleratorError",
            "CUDA error: unspecified launch failure",
        ),
        (  # a space the paste put between a module path and the class
            "(APIServer pid=1) pydantic_core._pydantic_core. ValidationError: 1 validation "
            "error for ModelConfig\n",
            "pydantic_core._pydantic_core.ValidationError",
            "1 validation error for ModelConfig",
        ),
        (  # pytest's report of the error under the source line that raised
            "    def f():\n>       from modelscope.utils.hf_util import _try_login\n"
            "E       ImportError: cannot import name '_try_login' from 'modelscope.utils'\n",
            "ImportError",
            "cannot import name '_try_login' from 'modelscope.utils'",
        ),
        (  # a numbered list of errors: the last one
            "1. ImportError: cannot import name 'cuda_utils' from partially initialized module "
            "'vllm'\n2. ImportError: cannot import name 'activation_ops' from 'vllm'\n",
            "ImportError",
            "cannot import name 'activation_ops' from 'vllm'",
        ),
    ],
)
def test_exception_lines_in_shapes_pastes_give_them(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.message) == (typ, message)


def test_a_frame_that_lost_file_and_line_is_still_a_frame(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "vllm/v1/core/sched/scheduler.py, in schedule\n    assert num_new_tokens > 0\n"
        "AssertionError\n",
    )
    assert (rc.type, rc.evidence, rc.origin) == ("AssertionError", "traceback", "vllm")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "Failed: Cuda error /home/u/vllm/csrc/custom_all_reduce.cuh:417 'resource already "
            "mapped'\nSegmentation fault (core dumped)\n",
            "Failed: Cuda error /home/u/vllm/csrc/custom_all_reduce.cuh:417",
        ),
        (
            "/opt/rocm-5.6.0/include/hip/hip_bf16.h:30:10: fatal error: "
            "'hip/amd_detail/amd_hip_bf16.h' file not found\n"
            "error: command '/opt/rocm-5.6.0/bin/hipcc' failed with exit code 1\n",
            "'hip/amd_detail/amd_hip_bf16.h' file not found",
        ),
        ("'NoneType' object has no attribute 'headers'\n", "'NoneType' object has no attribute"),
    ],
)
def test_an_errors_own_line_before_what_followed_it_is_the_root_cause(
    tmp_path: Path, text: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert rc.message.startswith(message)
    assert rc.evidence == "exception-line"


def test_a_pretty_printed_body_whose_quotes_a_paste_made_typographic(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '{\n  “object": ‘error’,\n'
        '    “message": ‘[{’type‘: ’missing‘, ’loc‘: (’body‘, ’file‘), ’msg‘: ’Field '
        'required‘}]”,\n    “type": ‘BadRequestError’,\n    “code": 400\n}\n',
    )
    assert (rc.type, rc.evidence) == ("BadRequestError", "exception-line")
    assert rc.message.startswith("[{’type‘: ’missing‘")


@pytest.mark.parametrize(
    ("line", "origin"),
    [
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate`",
            "environment",
        ),
        (
            "ValueError: ChatGLMForConditionalGeneration has no vLLM implementation and the "
            "Transformers implementation is not compatible with vLLM.",
            "environment",
        ),
        (
            "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent "
            "error. Ran out of memory in memory space hbm.",
            "environment",
        ),
        (
            "RESOURCE_EXHAUSTED: Error loading program 'jit__multi_slice': Attempting to reserve "
            "6.14G at the bottom of memory. That was not possible.",
            "environment",
        ),
        (
            "litellm.BadRequestError: LLM Provider NOT provided. Pass in the LLM provider you "
            "are trying to call.",
            "config",
        ),
        (
            "ValueError: vLLM V1 does not support per request user provided logits processors.",
            "config",
        ),
        (
            "AttributeError: '_OpNamespace' 'vllm' object has no attribute "
            "'unified_attention_with_output'",
            "environment",
        ),
        ("NameError: name 'vllm_ops' is not defined", "environment"),
        ("RuntimeError: No suitable kernel. h_in=64 h_out=3424 dtype=Float", "vllm"),
        (
            "EZ3002: [PID: 1] 2025-05-14 Optype [TransData] of Ops kernel [AIcoreEngine] is "
            "unsupported.",
            "unknown",
        ),
        ("AttributeError: 'MistralTokenizer' object has no attribute 'eos_token'", "vllm"),
    ],
)
def test_message_families_the_corpus_showed_say_whose_they_are(
    tmp_path: Path, line: str, origin: str
) -> None:
    rc = cause(tmp_path, line + "\n")
    assert rc.origin == origin, rc.why


def test_vllm_calling_another_packages_function_wrongly_is_the_installed_pair() -> None:
    rc = fixture_cause("field13", "inference_4809_layer_type_validation_args.log")
    assert (rc.type, rc.origin) == ("TypeError", "environment"), rc.why


def test_vllms_re_raise_of_the_models_error_shows_no_raiser() -> None:
    rc = fixture_cause("field13", "vllm_8054_ascend_model_execution_shape_invalid.log")
    assert rc.origin == "unknown", rc.why
    assert "model_runner_base" in rc.why


def test_difys_relay_of_a_servers_validation_list_is_difys_call() -> None:
    rc = fixture_cause("field13", "vllm_3906_openai_compatible_400_function_call_string_type.log")
    assert (rc.origin, rc.package) == ("caller", "dify"), rc.why
    assert "validation error" in rc.why
