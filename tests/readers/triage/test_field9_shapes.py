"""Readers and blame rules for what the eighth held-out corpus (``fixtures/logs/field9/``)
showed: pastes that are only an error's own words, HTTP error bodies as clients quote
them, relaying lines of proxies, wrappers and frameworks, and the checks whose words say
whose the failure is. Each on a minimal excerpt of the real shape, and on the fixture it
was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause, no_cause
from vllmdiag.readers.triage.reader import BLOCK, TAIL, scan

# a paste that is only the error's own words: the catalogue knows them


def test_a_known_check_pasted_alone_without_its_type_is_its_exception_line(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "The quantization method awq is not supported for the current GPU. Minimum "
        "capability: 75. Current capability: 70.\n",
    )
    assert (rc.type, rc.evidence, rc.origin, rc.known) == (
        "",
        "exception-line",
        "config",
        "quantization-needs-newer-gpu",
    )


def test_the_last_known_line_of_a_pastes_end_is_read_past_advice_after_it() -> None:
    rc = fixture_cause("field9", "vllm_16307_docker_v073_no_kernel_image.log")
    assert (rc.message, rc.evidence, rc.origin) == (
        "CUDA error: no kernel image is available for execution on the device",
        "exception-line",
        "environment",
    )


@pytest.mark.parametrize(
    "text",
    [
        # a record logged below error level: the run went on
        "INFO 01-06 01:31:10 [importing.py:68] Model architectures ['X'] failed to be "
        "inspected. Please check the logs for more details.\n",
        # the text of a Python warning
        "/x/torch/cuda/__init__.py:287: UserWarning: \n"
        "NVIDIA GeForce RTX 5070 Ti with CUDA capability sm_120 is not compatible with the "
        "current PyTorch installation.\n",
        # a line of source code a paste cut the traceback after
        '    raise ValueError("No available memory for the cache blocks. "\n',
        # one word the catalogue also knows as a signal's
        "NFO 07-04 19:10:08 async_llm_engine.py:152] Aborted request cmpl-e5fb5.\n",
        # words the catalogue does not know
        "The server is still loading the model, please retry later.\n",
    ],
)
def test_what_is_not_an_errors_own_line_is_never_taken_alone(tmp_path: Path, text: str) -> None:
    assert no_cause(tmp_path, text).startswith("unknown:")


def test_the_logs_last_lines_are_kept_across_blocks(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    filler = b"x" * 99 + b"\n"
    body = filler * (BLOCK // len(filler) + 3) + b"first\n\n" + b"second\nthird"
    log.write_bytes(body)
    info = scan(log, lambda n, raw: None, lambda: False)
    assert len(info.tail) == TAIL
    assert [raw for _, raw in info.tail[-3:]] == [b"first", b"second", b"third"]
    assert info.tail[-1][0] == info.lines and info.tail[-2][0] == info.lines - 1
    assert info.tail[-3][0] == info.lines - 3  # the blank line between is counted, not kept


def test_pips_label_before_its_refusal_is_not_the_message() -> None:
    rc = fixture_cause("field9", "vllm_2695_pip_build_deps_no_torch_212_py312.log")
    assert (rc.message, rc.origin, rc.known) == (
        "No matching distribution found for torch==2.1.2",
        "environment",
        "pip-no-matching-distribution",
    )


# HTTP error bodies, as pasted and as clients quote them


def test_a_pretty_printed_body_is_typed_by_its_type_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '{\n    "object": "error",\n    "message": "At most 1 image(s) may be provided in '
        'one request.",\n    "type": "BadRequestError",\n    "param": null,\n    "code": 400\n}\n',
    )
    assert (rc.type, rc.message, rc.evidence, rc.origin) == (
        "BadRequestError",
        "At most 1 image(s) may be provided in one request.",
        "exception-line",
        "config",
    )


def test_a_json_body_on_one_line_relays_the_servers_error() -> None:
    rc = fixture_cause("field9", "camel_1585_tool_choice_tools_must_be_set.log")
    assert (rc.type, rc.evidence, rc.origin, rc.known) == (
        "BadRequestError",
        "wrapper-message",
        "config",
        "request-tool-choice-without-tools",
    )


def test_a_body_without_a_type_names_the_message_and_no_one(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Error in generating model output:\nError code: 500 - {'message': 'Internal server "
        "error'}\n",
    )
    assert (rc.type, rc.message, rc.evidence, rc.origin) == (
        "",
        "Internal server error",
        "wrapper-message",
        "unknown",
    )


def test_a_java_clients_exception_around_the_body_is_a_wrapper() -> None:
    rc = fixture_cause("field9", "spring-ai_3438_400_concatenate_str_dict_tool_calls.log")
    assert (rc.type, rc.evidence, rc.origin) == ("BadRequestError", "wrapper-message", "unknown")
    assert rc.message.startswith('can only concatenate str (not "dict") to str')


def test_a_request_the_server_found_incomplete_is_the_framework_that_sent_it() -> None:
    rc = fixture_cause("field9", "spring-ai_3775_nontransient_400_body_field_required.log")
    assert (rc.type, rc.evidence, rc.origin, rc.package) == (
        "",
        "wrapper-message",
        "caller",
        "spring-ai",
    )


def test_litellms_provider_exception_quoting_a_body_gives_the_bodys_error() -> None:
    rc = fixture_cause("field9", "dspy_1758_context_window_2048_bootstrap.log")
    assert (rc.type, rc.origin, rc.package) == ("BadRequestError", "caller", "dspy")
    assert rc.message.startswith("This model's maximum context length is 2048 tokens.")


# relaying lines: a proxy, a wrapper, Docker, frameworks


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "upstream connect error or disconnect/reset before headers. reset reason: remote "
            "connection failure, transport failure reason: delayed connect error: Connection "
            "refused\n",
            "upstream connect error or disconnect/reset before headers.",
        ),
        (
            "Server process exited unexpectedly with exit code 1\n",
            "Server process exited unexpectedly with exit code 1",
        ),
    ],
)
def test_a_proxy_or_wrapper_saying_the_server_is_gone_relays_an_unknown_error(
    tmp_path: Path, text: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert rc.message.startswith(message)
    assert (rc.evidence, rc.origin) == ("wrapper-message", "unknown")


def test_dockers_refusal_goes_on_over_the_lines_after_it() -> None:
    rc = fixture_cause("field9", "vllm_5635_docker_nvidia_container_cli_cuda124.log")
    assert rc.process == "docker"
    assert rc.message.startswith("Error response from daemon: failed to create task")
    assert "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4" in (
        rc.message
    )
    assert (rc.origin, rc.known) == ("environment", "container-driver-too-old")


def test_an_argument_error_a_user_quoted_without_its_type_is_read(tmp_path: Path) -> None:
    rc = cause(
        tmp_path, "\"LLM.generate() got an unexpected keyword argument 'prompt_token_ids' \"\n"
    )
    assert (rc.type, rc.message, rc.evidence, rc.origin) == (
        "",
        "LLM.generate() got an unexpected keyword argument 'prompt_token_ids'",
        "exception-line",
        "unknown",
    )


def test_ragflows_error_label_is_not_part_of_the_relayed_message(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "    hint : 102 Fail to access model(VLLM/qwen3-30b).**ERROR**: CONNECTION_ERROR - "
        "Connection error.\n",
    )
    assert rc.message == "CONNECTION_ERROR - Connection error."


def test_smolagents_relaying_an_argument_error_is_its_call() -> None:
    rc = fixture_cause("field9", "smolagents_1794_generate_guided_options_request.log")
    assert (rc.message, rc.evidence, rc.origin, rc.package) == (
        "LLM.generate() got an unexpected keyword argument 'guided_options_request'",
        "wrapper-message",
        "caller",
        "smolagents",
    )


def test_a_warning_quoting_a_failed_import_relays_it() -> None:
    rc = fixture_cause("field9", "verl_393_vllm_version_commit_hash_warning_only.log")
    assert (rc.message, rc.evidence, rc.origin) == (
        "No module named 'vllm._version'",
        "wrapper-message",
        "environment",
    )


def test_a_raise_glued_to_the_line_above_and_a_frame_without_its_line_number(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        'File " /x/site-packages/vllm/model executor/models/registry.py"\n'
        "ortedraise ValueError(ValueError: Model architectures ['Qwen2_5_VL'] faited to be "
        "inspected. please check\n",
    )
    assert (rc.type, rc.evidence, rc.origin) == ("ValueError", "traceback", "unknown")


# checks whose words say whose the failure is


@pytest.mark.parametrize(
    ("text", "origin", "package"),
    [
        (
            "ValueError: GGUF model with architecture olmo2 is not supported yet\n",
            "environment",
            None,
        ),
        (
            "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min "
            "capability: 80. ', 'Current capability: 75.')\n",
            "config",
            None,
        ),
        (
            "RuntimeError: Cannot find any model weights with `/models/vicuna/snapshots/3deb`\n",
            "config",
            None,
        ),
        # a Hub id: whether its files are missing on this node or never existed is not shown
        ("RuntimeError: Cannot find any model weights with 'org/model'\n", "unknown", None),
        (
            "ValueError: Unknown quantization method: gptq. Must be one of ['awq', "
            "'squeezellm'].\n",
            "environment",
            None,
        ),
        ("ValueError: Unknown quantization method: gptqq.\n", "config", None),
        ("vllm_mode must be either 'server' or 'colocate', got 'server'.\n", "caller", "trl"),
        ("vllm_mode must be either 'server' or 'colocate', got 'serve'.\n", "config", None),
        (
            "ValueError: Model architectures ['DeepseekForCausalLM'] failed to be inspected. "
            "Please check the logs for more details.\n",
            "unknown",
            None,
        ),
    ],
)
def test_the_checks_words_say_whose_it_is(
    tmp_path: Path, text: str, origin: str, package: str | None
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.origin, rc.package) == (origin, package), rc.why


def test_no_gpu_in_a_ray_task_of_the_code_driving_vllm_is_not_the_machines_alone() -> None:
    rc = fixture_cause("field9", "lighteval_841_ray_dp_no_gpu_current_node.log")
    assert (rc.process, rc.origin) == ("run_inference_one_model pid=2816485", "unknown")


def test_no_gpu_in_vllms_own_ray_worker_is_the_machines(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "(RayWorkerWrapper pid=77) ValueError: Current node has no GPU available. "
        "current_node_resource={'CPU': 8.0}. vLLM engine cannot start without GPU.\n",
    )
    assert rc.origin == "environment"


def test_a_librarys_lookup_whose_asker_is_cut_names_no_one() -> None:
    rc = fixture_cause("field9", "verl_2697_ray_dag_with_tensor_transport_pp.log")
    assert rc.origin == "unknown"
    assert "not in view" in (rc.why or "")
