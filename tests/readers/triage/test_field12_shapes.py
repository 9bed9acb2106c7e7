"""Readers and blame rules for what the eleventh held-out corpus (``fixtures/logs/field12/``)
showed: an exception line with a space before its colon, a program's relaying words before
an error the catalogue knows, torch's compile wrappers, HTTP error bodies nested as OpenAI
nests them, a framework's check of its own arguments, and message families no entry knew.
Each on a minimal excerpt of the real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause


def test_a_space_before_the_colon_still_makes_an_exception_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "ValueError : the model's max seq len (32768) is larger than the maxinum number of "
        "tokens that can be stored in KV cache, Try increasing 'gpu_memory_utilization'\n",
    )
    assert (rc.type, rc.evidence, rc.origin) == ("ValueError", "exception-line", "config")
    assert rc.message.startswith("the model's max seq len (32768)")
    real = fixture_cause("field12", "qwen3_110_gptq_int4_max_seq_len_kv_cache.log")
    assert (real.type, real.origin) == ("ValueError", "config")


@pytest.mark.parametrize(
    ("text", "message", "origin"),
    [
        (
            "ERROR - Failed to derive max model length: cannot import name 'AutoConfig' from "
            "'modelscope' (/venv/lib/python3.11/site-packages/modelscope/__init__.py)\n",
            "cannot import name 'AutoConfig' from 'modelscope'",
            "environment",
        ),
        (
            "ERROR 07-16 12:08:18 api_server.py:247] Error in applying chat template from "
            "request: Conversation roles must alternate user/assistant/user/assistant/...\n",
            "Conversation roles must alternate",
            "config",
        ),
        (
            "> Error during extraction: Both structured output format and JSON mode failed. "
            "Original error: litellm.NotFoundError: NotFoundError: Hosted_vllmException - The "
            "model `google/gemma-3-27b-it` does not exist.\n"
            "> This might happen if the LM is not properly configured or accessible\n",
            "The model `google/gemma-3-27b-it` does not exist.",
            "config",
        ),
    ],
)
def test_a_programs_relaying_words_before_a_known_error_give_that_error(
    tmp_path: Path, text: str, message: str, origin: str
) -> None:
    rc = cause(tmp_path, text)
    assert rc.message.startswith(message), rc.message
    assert (rc.type, rc.evidence, rc.origin) == ("", "wrapper-message", origin)


def test_an_errors_own_kind_before_its_colon_is_no_relay(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "ERROR 04-08 19:59:10 engine.py:400] CUDA error: no kernel image is available for "
        "execution on the device\n",
    )
    assert rc.message.startswith("CUDA error: no kernel image")
    assert (rc.evidence, rc.origin) == ("exception-line", "environment")


def test_torchs_compile_wrappers_give_the_error_they_carry(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "torch._dynamo.exc.InternalTorchDynamoError: ImportError: cannot import name "
        "'_args_sortkey' from 'sympy.core.basic' (/env/lib/python3.12/site-packages/sympy/"
        "core/basic.py)\n",
    )
    assert (rc.type, rc.origin) == ("ImportError", "environment")
    assert rc.message.startswith("cannot import name '_args_sortkey'")
    backend = fixture_cause("field12", "vllm_17455_inductor_gcc_cuda_utils_failed.log")
    assert (backend.type, backend.origin) == ("CalledProcessError", "unknown")
    assert backend.message.startswith("Command '['/usr/local/gcc/bin/gcc'")


def test_an_exception_line_a_sentence_in_chinese_runs_into_keeps_its_type(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "Seek help, Qwen-14B-Chat-Int4 vllm部署报错ValueError: The input size is not aligned "
        "with the quantized weight shape. This can be caused by too large tensor parallel "
        "size。\n",
    )
    assert (rc.type, rc.evidence, rc.origin) == ("ValueError", "exception-line", "config")
    assert rc.message.startswith("The input size is not aligned")
    assert not rc.message.endswith("。")


def test_a_users_here_is_the_error_label_is_not_the_message(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Here is the error: BitsAndBytes load format and QLoRA adapter only support "
        "'bitsandbytes' quantization\n",
    )
    assert rc.message.startswith("BitsAndBytes load format")
    assert (rc.evidence, rc.origin) == ("exception-line", "config")


def test_dockers_build_refusal_is_dockers_own_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Sending build context to Docker daemon  76.41MB\n"
        "Error response from daemon: dockerfile parse error line 36: unknown instruction: GCC\n",
    )
    assert (rc.process, rc.evidence, rc.origin) == ("docker", "exception-line", "environment")


@pytest.mark.parametrize(
    ("text", "typ", "message", "origin"),
    [
        (  # OpenAI's nesting of the body, its JSON escapes read
            '{"error":{"message":"\\"auto\\" tool choice requires --enable-auto-tool-choice '
            'and --tool-call-parser to be set","type":"BadRequestError","param":null,'
            '"code":400}}\n',
            "BadRequestError",
            '"auto" tool choice requires --enable-auto-tool-choice',
            "config",
        ),
        (  # the same inside a framework's warning that it retries
            '2026-03-09 17:21:07 - evalscope - WARNING: Retrying... <{"error": {"message": '
            '"The min_tokens, min_p, and logit_bias sampling parameters are not yet supported '
            'with speculative decoding.", "type": "BadRequestError", "param": null, "code": '
            "400}}>\n",
            "BadRequestError",
            "The min_tokens, min_p, and logit_bias sampling parameters",
            "config",
        ),
        (  # the OpenAI client before 1.0 quoting the body it could not read
            'openai.error.APIError: Invalid response object from API: \'{"object":"error",'
            '"message":"max_tokens must be at least 1, got -53.","type":"invalid_request_error",'
            '"param":null,"code":null}\' (HTTP response code was 400)\n',
            "",
            "max_tokens must be at least 1, got -53.",
            "config",
        ),
        (  # a client's exception ending with the server's error as its repr
            "openai.InternalServerError: modal-http: internal server error: status Failure: "
            "ValueError('BitAndBytes with enforce_eager = False is not supported yet.')\n",
            "ValueError",
            "BitAndBytes with enforce_eager = False is not supported yet.",
            "config",
        ),
    ],
)
def test_a_clients_record_of_the_servers_error_gives_that_error(
    tmp_path: Path, text: str, typ: str, message: str, origin: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.evidence, rc.origin) == (typ, "wrapper-message", origin)
    assert rc.message.startswith(message), rc.message


def test_one_error_of_a_servers_validation_list_after_a_label_is_relayed(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "validation error:\n"
        "  {'type': 'missing', 'loc': ('body',), 'msg': 'Field required', 'input': None}\n",
    )
    assert rc.message.startswith("{'type': 'missing', 'loc': ('body',)")
    assert (rc.evidence, rc.origin) == ("wrapper-message", "unknown")


def test_a_failed_steps_record_takes_its_error_from_the_next_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "INFO     [agent] Step 1\n"
        "ERROR    [agent] Result failed 1/3 times:\n"
        " Internal Server Error\n"
        "INFO     [agent] Step 1\n",
    )
    assert (rc.message, rc.evidence, rc.origin) == (
        "Internal Server Error",
        "wrapper-message",
        "unknown",
    )


def test_ragflows_relay_with_a_plain_error_label(tmp_path: Path) -> None:
    rc = cause(
        tmp_path, "Fail to access model (Qwen2.5-32B-Instruct-AWQ). ERROR: Connection error.\n"
    )
    assert (rc.message, rc.evidence, rc.origin) == (
        "Connection error.",
        "wrapper-message",
        "unknown",
    )


@pytest.mark.parametrize(
    ("line", "origin"),
    [
        ("Attempted to assign 1128 = 1128 multimodal tokens to 1080 placeholders", "unknown"),
        ("LLM factory VLLM is not allowed", "unknown"),
        ("Your API key is invalid. Fail to access model.", "unknown"),
        (
            "ValueError: Prequant BitsAndBytes models with tensor parallelism is not "
            "supported. Please try with pipeline parallelism.",
            "config",
        ),
        (
            "ValueError: Expected both speculative_model and num_speculative_tokens to be "
            "provided, but found speculative_model='x' and num_speculative_tokens=4.",
            "config",
        ),
        (
            "ERROR 06-19 07:36:24 [serving_chat.py:200] mistral_common.exceptions."
            "InvalidMessageStructureException: Unexpected role 'user' after role 'tool'",
            "config",
        ),
        ("ValueError: Placement group bundle cannot have more than 1 GPU.", "unknown"),
        (
            "ValueError: Tasks not found: leaderboard_bbh. Try `lm-eval --tasks list` for list "
            "of available tasks",
            "config",
        ),
        (
            "RuntimeError: Bad StatusOr access: UNKNOWN: TPU initialization failed: "
            "open(/dev/vfio/0): Device or resource busy",
            "environment",
        ),
        (
            "Please make sure 'vllm' is installed. You can install it by `pip install vllm`",
            "environment",
        ),
        ("RuntimeError: CUDA error: unspecified launch failure", "unknown"),
        (
            "ERROR 11-19 10:12:21 [distributed/.../v1/nixl_connector.py:1068] Potentially "
            "invalid KV blocks for unrecognized request chatcmpl-1 were retrieved by a decode "
            "worker. They may have expired.",
            "unknown",
        ),
        (
            "CUDA error (/__w/xformers/xformers/third_party/flash-attention/hopper/"
            "flash_fwd_launch_template.h:188): invalid argument",
            "unknown",
        ),
        (
            "RuntimeError: Failed to load the tokenizer. If the tokenizer is a custom "
            "tokenizer not yet available in the HuggingFace transformers library, consider "
            "setting trust_remote_code=True in LLM or using the --trust-remote-code flag",
            "config",
        ),
    ],
)
def test_message_families_the_corpus_showed_say_whose_they_are(
    tmp_path: Path, line: str, origin: str
) -> None:
    rc = cause(tmp_path, line + "\n")
    assert rc.origin == origin, rc.why
    assert rc.known is not None, "a catalogue entry names it"


@pytest.mark.parametrize(
    ("name", "framework"),
    [
        ("llamafactory_8173_vllm_backend_only_api_cli_web.log", "llamafactory"),
        ("ms-swift_5249_remaining_argv_vllm_gpu_memory_utilization.log", "swift"),
    ],
)
def test_a_frameworks_check_of_its_own_arguments_is_the_users_setting(
    name: str, framework: str
) -> None:
    rc = fixture_cause("field12", name)
    assert (rc.origin, rc.package) == ("config", None), rc.why
    assert framework in rc.why


def test_a_frameworks_other_code_is_still_the_caller(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.10/site-packages/swift/llm/infer/infer.py", line 24, in '
        "infer\n"
        "    raise ValueError(f'bad state: {x}')\n"
        "ValueError: bad state: 3\n",
    )
    assert (rc.origin, rc.package) == ("caller", "swift")


@pytest.mark.parametrize(
    ("name", "package"),
    [
        ("graphrag_357_conversation_roles_must_alternate.log", "graphrag"),
        ("dots.ocr_267_no_module_layers_sampler.log", "dots.ocr"),
    ],
)
def test_frameworks_known_by_their_lines_or_folders_are_the_caller(name: str, package: str) -> None:
    rc = fixture_cause("field12", name)
    assert (rc.origin, rc.package) == ("caller", package), rc.why
