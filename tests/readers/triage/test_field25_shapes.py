"""Readers and blame rules for what the twenty-fourth held-out corpus
(``fixtures/logs/field25/``, 80 logs) showed: error bodies read whole (JSON or the dict
Python prints, keys in any order, a pretty-printed body's type above its message), an HTTP
status with its reason before the server's words, a type named by its module's dotted
path, a traceback whose tag only its header kept, a frame glued to its source and its
exception, a code span's backtick after a bare type, a shell's ``not found``, vLLM's
wrapper quoted inside a sentence, rich-click's error panel; and whose fault: an HTTP
client's connection error, the file system refusing a directory, a test's assertion, a
module directly in a checkout's ``vllm`` folder. Each on a minimal excerpt of the real
shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a gateway's body, its code before its message (AIBrix)
        (
            '{"error":{"code":500,"message":"invalid character \'u\' looking for beginning '
            'of value"}}\n',
            "invalid character 'u' looking for beginning of value",
        ),
        # the same behind a user's label
        (
            'return:{"error":{"code":503,"message":"httproute: a/b-router, route\'s object '
            'references are not resolved: BackendNotFound."}}\n',
            "httproute: a/b-router, route's object references are not resolved: BackendNotFound.",
        ),
        # a body whose error is a string, inside markdown's bold quote (Triton's backend)
        (
            '**> {"error":"generate expects model to produce exactly 1 response, use generate '
            'stream for model that generates various number of responses"}**\n',
            "generate expects model to produce exactly 1 response",
        ),
        # the dict OpenAI's client prints, its object after its message
        (
            "Error code: 400 - {'message': \"Unexpected keyword argument 'best_of'\", "
            "'object': 'error'}\n",
            "Unexpected keyword argument 'best_of'",
        ),
        # a client's status with its reason phrase, then the server's words
        (
            "Error: HTTP 422: Unprocessable Entity - Failed to deserialize the JSON body into "
            "the target type: tools[46].function: missing field `parameters`\n",
            "Failed to deserialize the JSON body into the target type",
        ),
    ],
)
def test_an_error_body_is_read_whole_whatever_its_keys_order(
    tmp_path: Path, text: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.type) == ("wrapper-message", "")
    assert rc.message.startswith(message)


def test_a_json_object_without_an_error_is_no_body(tmp_path: Path) -> None:
    # a request's body pasted last: a dict, but nothing in it says it failed
    from vllmdiag.readers.triage.httperrors import parsed_body

    assert parsed_body('{"model": "x", "messages": [{"role": "user"}]}') is None
    assert parsed_body("{'object': 'list', 'data': []}") is None
    assert parsed_body('{"error": {"code": 1}}') is None


def test_a_pretty_printed_bodys_type_above_its_message_types_it(tmp_path: Path) -> None:
    # DJL's body as SageMaker returns it: code, type, then message
    rc = cause(
        tmp_path,
        '{\n "code": 400,\n "type": "BadRequestException",\n'
        ' "message": "Parameter model_name is required."\n}\n',
    )
    assert (rc.type, rc.message) == ("BadRequestException", "Parameter model_name is required.")


def test_a_type_named_by_its_modules_dotted_path_is_a_type(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "huggingface_hub.utils._http.OfflineModeIsEnabled: Cannot reach https://huggingface.co"
        "/api/models/x/y: offline mode is enabled. To disable it, please unset the "
        "`HF_HUB_OFFLINE` environment variable.\n",
    )
    assert rc.type == "huggingface_hub.utils._http.OfflineModeIsEnabled"
    assert rc.origin == "config", rc.why  # the user's own HF_HUB_OFFLINE


def test_a_traceback_whose_tag_only_its_header_kept_is_that_processs(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "(EngineCore_0 pid=142) ERROR 09-30 14:04:50 [core.py:702] Traceback (most recent "
        "call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py",'
        " line 712, in _prepare_inputs\n"
        "    tokens = [scheduler_output.num_scheduled_tokens[i] for i in req_ids]\n"
        "KeyError: None\n",
    )
    assert (rc.process, rc.evidence, rc.origin) == ("EngineCore_0 pid=142", "traceback", "vllm")


def test_a_frame_glued_to_its_source_and_exception_is_read_apart(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'File "/x/site-packages/requests/adapters.py", line 519, in send raise '
        "ConnectionError(e, request=request) requests.exceptions.ConnectionError: "
        "(MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Failed to "
        "resolve 'huggingface.co' ([Errno -3] Temporary failure in name resolution)\"))\n",
    )
    assert (rc.type, rc.evidence) == ("requests.exceptions.ConnectionError", "traceback")
    assert rc.origin == "environment", rc.why  # the host did not resolve: the network


def test_a_code_spans_backtick_after_a_bare_type_is_no_part_of_it(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/vllm/transformers_utils/config.py", line 623, in '
        "load_params_config\n"
        "    assert isinstance(config_dict, dict)\n"
        "AssertionError`\n",
    )
    assert (rc.type, rc.origin) == ("AssertionError", "vllm")


def test_a_shells_not_found_is_its_own_error(tmp_path: Path) -> None:
    rc = cause(tmp_path, "/bin/sh: 1: /usr/local/cuda/bin/nvcc: not found\n")
    assert (rc.process, rc.message, rc.origin) == (
        "/bin/sh",
        "/usr/local/cuda/bin/nvcc: not found",
        "environment",
    )


def test_vllms_wrapper_quoted_in_a_sentence_gives_the_error_it_quotes(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "I'm getting this error: \"RuntimeError: Worker failed with error 'Cannot "
        "re-initialize the input batch when CPU weight offloading is enabled. See "
        "https://github.com/vllm-project/vllm/pull/18298 for more details.', please check "
        'the stack trace above for the root cause"\n',
    )
    assert rc.evidence == "wrapper-message"
    assert rc.message.startswith("Cannot re-initialize the input batch when CPU weight")
    assert rc.origin == "config", rc.why  # a combination the release refuses


def test_rich_clicks_error_panel_is_a_refused_command_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Usage: lighteval vllm [OPTIONS] MODEL_ARGS TASKS\n"
        "Try 'lighteval vllm --help' for help.\n"
        "╭─ Error ──────────────────────────────────────────╮\n"
        "│ Got unexpected extra argument (custom|aime24|0|0) │\n"
        "╰──────────────────────────────────────────────────╯\n",
    )
    assert (rc.evidence, rc.message, rc.origin) == (
        "cli-error",
        "Got unexpected extra argument (custom|aime24|0|0)",
        "config",
    )


@pytest.mark.parametrize(
    ("text", "origin", "why"),
    [
        # an HTTP client's connection error: the client only reports it
        (
            "Traceback (most recent call last):\n"
            '  File "/x/site-packages/openai/_base_client.py", line 1002, in request\n'
            "    raise APIConnectionError(request=request) from err\n"
            "openai.APIConnectionError: Connection error.\n",
            "unknown",
            "connection failed",
        ),
        # the file system refusing to make a cache folder, under a library's call
        (
            "Traceback (most recent call last):\n"
            '  File "/x/site-packages/flashinfer/jit/core.py", line 18, in <module>\n'
            "    os.makedirs(jit_env.FLASHINFER_WORKSPACE_DIR, exist_ok=True)\n"
            '  File "<frozen os>", line 225, in makedirs\n'
            "FileNotFoundError: [Errno 2] No such file or directory: '/u/x/.cache/flashinfer'\n",
            "environment",
            "os.makedirs",
        ),
        # a test's failed assertion: it only checks
        (
            "E       AssertionError: 'chat-template-on-main' != 'chat-template-on-revision'\n"
            "\n"
            "tests/models/vllm/test_vllm_model.py:17: AssertionError\n",
            "unknown",
            "test's assertion",
        ),
        # a port another process holds
        ("zmq.error.ZMQError: Address in use (addr='tcp://127.0.0.1:45974')\n", "environment", ""),
    ],
)
def test_whose_fault_by_what_failed_not_by_who_reported_it(
    tmp_path: Path, text: str, origin: str, why: str
) -> None:
    rc = cause(tmp_path, text)
    assert rc.origin == origin, rc.why
    assert why in rc.why


def test_a_module_directly_in_a_checkouts_vllm_folder_is_vllms(tmp_path: Path) -> None:
    # vLLM's image kept its checkout at /workspace/vllm: config.py is vLLM's, not a script
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/workspace/vllm/entrypoints/openai/api_server.py", line 73, in '
        "model_is_embedding\n"
        "    return ModelConfig(model=model_name,\n"
        '  File "/workspace/vllm/config.py", line 1739, in _get_and_verify_max_len\n'
        '    assert "factor" in rope_scaling\n'
        "AssertionError\n",
    )
    assert rc.origin == "vllm", rc.why


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        (
            "ValueError: The checkpoint you are trying to load has a model type of `cohere`, "
            "which Transformers does not recognize. This may be due to a problem with the "
            "checkpoint or an outdated version of Transformers.\n",
            "environment",
        ),
        (
            "Please use Flashinfer backend for models withlogits_soft_cap (i.e., Gemma-2). "
            "Otherwise, the output might be wrong. Set Flashinfer backend by export "
            "VLLM_ATTENTION_BACKEND=FLASHINFER. (type=value_error)\n",
            "config",
        ),
        (
            "Sliding window for some but all layers is not supported. This model uses sliding "
            "window but `max_window_layers` = 28 is less than `num_hidden_layers` = 28. Please "
            "open an issue to discuss this feature.\n",
            "vllm",
        ),
    ],
)
def test_new_and_widened_catalogue_entries(tmp_path: Path, text: str, origin: str) -> None:
    assert cause(tmp_path, text).origin == origin


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("aibrix_1070_gateway_500_invalid_character.log", "wrapper-message", "unknown"),
        ("aibrix_1845_httproute_backend_not_found_503.log", "wrapper-message", "unknown"),
        ("ms-swift_6947_deploy_vllm_unexpected_best_of.log", "wrapper-message", "unknown"),
        ("router_275_http_422_missing_field_parameters.log", "wrapper-message", "unknown"),
        ("djl-serving_2843_model_name_required_400.log", "exception-line", "unknown"),
        ("vllm_3719_offline_mode_is_enabled_hub_api.log", "exception-line", "config"),
        ("vllm_25991_keyerror_none_prepare_inputs_concurrent_embedding.log", "traceback", "vllm"),
        ("vllm_1986_hub_connectionerror_no_internet.log", "traceback", "environment"),
        ("vllm_15300_load_params_config_assertion_mistral_small.log", "traceback", "vllm"),
        ("vllm_21960_flashinfer_jit_nvcc_not_found_sh.log", "exception-line", "environment"),
        ("vllm_26206_cpu_offload_reinit_input_batch.log", "wrapper-message", "config"),
        ("open-rs_7_lighteval_vllm_unexpected_extra_argument.log", "cli-error", "config"),
        ("redis-ai-resources_87_vllmopenai_apiconnectionerror.log", "traceback", "unknown"),
        (
            "tt-inference-server_37_hf_cache_makedirs_permission_denied.log",
            "traceback",
            "environment",
        ),
        ("llmflux_59_flashinfer_workspace_makedirs_filenotfound.log", "traceback", "environment"),
        ("vllm_38078_windows_fixed_zmq_port_address_in_use.log", "exception-line", "environment"),
        ("lighteval_721_vllm_tokenizer_revision_chat_template.log", "traceback", "unknown"),
        ("vllm_8139_qwen2vl_rope_scaling_factor_assert.log", "traceback", "vllm"),
        ("openllm_944_cohere_model_type_not_recognized.log", "exception-line", "environment"),
        ("cot-eval_56_gemma2_flashinfer_logits_soft_cap.log", "exception-line", "config"),
        ("vllm_15705_qwen25_sliding_window_some_layers.log", "exception-line", "vllm"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field25", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
