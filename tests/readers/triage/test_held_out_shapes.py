"""Readers for the paste shapes the fourth to sixth held-out corpora (``field5`` to
``field7``) showed: each on a minimal excerpt of the real shape, and on the fixture it was
found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause, no_cause
from vllmdiag.readers.triage.lines import normalise, unglue

# an error logged on its own line above a traceback the paste cut


def test_a_keyerrors_quoted_key_logged_above_a_cut_stack_is_the_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "ERROR 12-09 00:49:29 engine.py:366] 'layers.0.mlp.down_proj.weight.absmax'\n"
        "ERROR 12-09 00:49:29 engine.py:366] Traceback (most recent call last):\n"
        'ERROR 12-09 00:49:29 engine.py:366]   File "/x/site-packages/vllm/model_executor/'
        'models/llama.py", line 9, in load_weights\n'
        "ERROR 12-09 00:49:29 engine.py:366]     param = params_dict[na\n",
    )
    assert (rc.type, rc.message, rc.evidence) == (
        "",
        "'layers.0.mlp.down_proj.weight.absmax'",
        "traceback",
    )


def test_an_exceptions_repr_logged_above_its_stack_gives_type_and_message() -> None:
    rc = fixture_cause("field5", "vllm_11484_xgrammar_spec_decode_indexerror.log")
    assert (rc.type, rc.message, rc.origin) == (
        "IndexError",
        "Error in model execution: tuple index out of range",
        "vllm",
    )


def test_a_frameworks_context_before_the_logged_error_is_not_its_message() -> None:
    rc = fixture_cause("field6", "gpustack_3969_failed_get_vllm_backend_image.log")
    assert (rc.message, rc.origin, rc.package) == (
        "Failed to get vLLM backend image",
        "caller",
        "gpustack",
    )


# lines a paste glued together, and messages that must stop


def test_two_vllm_records_on_one_line_are_two_lines() -> None:
    raw = (
        "ERROR 08-04 07:35:11 [core.py:515]      ^^^^^ ERROR 08-04 07:35:11 [core.py:515] "
        "OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found"
    )
    parts = unglue(raw)
    assert len(parts) == 2 and parts[1].startswith("ERROR 08-04 07:35:11 [core.py:515] OSError")
    assert normalise(parts[1], 2).text.startswith("OSError: ")


def test_a_raise_glued_to_its_exception_line_is_split() -> None:
    parts = unglue("    raise AttributeError(AttributeError: 'M' object has no attribute 'x'")
    assert parts == ["    raise AttributeError(", "AttributeError: 'M' object has no attribute 'x'"]
    rc = fixture_cause("field7", "unsloth_2107_qwen2_no_vllm_engine.log")
    assert (rc.type, rc.origin, rc.package) == ("AttributeError", "caller", "unsloth")


@pytest.mark.parametrize(
    "after",
    [
        "Exception ignored in: <function Remote.__del__ at 0x70cc353d5bc0>",
        "--------------------",
        "For simplicity, JAX has removed its internal frames from the traceback of the "
        "following exception. Set JAX_TRACEBACK_FILTERING=off to include these.",
    ],
)
def test_a_message_stops_before_shutdown_noise_and_jaxs_note(tmp_path: Path, after: str) -> None:
    rc = cause(
        tmp_path,
        'Traceback (most recent call last):\n  File "/x/site-packages/nixl/_api.py", line 6, in f\n'
        "    g()\nnixl._bindings.nixlNotAllowedError: NIXL_ERR_NOT_ALLOWED\n" + after + "\n",
    )
    assert rc.message == "NIXL_ERR_NOT_ALLOWED"
    assert rc.origin == "unknown", "a NIXL status names the kind, not who must act"


def test_markdown_bold_around_a_message_is_not_part_of_it() -> None:
    rc = fixture_cause("field7", "ms-swift_4676_no_parameter_score_qwen2vl.log")
    assert (
        rc.message
        == "There is no module or parameter named 'score' in Qwen2VLForConditionalGeneration"
    )


# prefixes and process tags


def test_ray_serves_logger_prefix_is_peeled() -> None:
    line = normalise(
        "ERROR 2024-09-19 08:23:55,732 controller 528 deployment_state.py:681 - Exception in "
        "Replica(id='352yge88'), the replica will be stopped.",
        1,
    )
    assert line.text.startswith("Exception in Replica(")


def test_torchs_rank_inside_a_vllm_process_tag_keeps_the_process() -> None:
    assert normalise("(EngineCore pid=165) [rank0]:   File x", 1).process == "EngineCore pid=165"
    assert normalise("(WorkerDict pid=7) [rank1]: boom", 1).process == "rank1"


# frames as other pastes print them


def test_unindented_frame_and_source_line_are_the_exceptions_frames(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'File "/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", line 54, in '
        "<module>\n\nfrom vllm.model_executor.model_loader.utils import process_weights\n\n"
        "ImportError: cannot import name 'process_weights' from 'vllm.model_executor.model_"
        "loader.utils'\n",
    )
    assert (rc.evidence, rc.origin, rc.package) == ("traceback", "caller", "verl")


def test_a_paste_indented_whole_keeps_its_exception_line_and_prefers_the_framed_copy() -> None:
    rc = fixture_cause("field7", "areal_652_vllm_server_port_overflow.log")
    assert (rc.type, rc.evidence, rc.origin, rc.package) == (
        "OverflowError",
        "traceback",
        "caller",
        "areal",
    )


def test_colabs_linked_frames_and_ipythons_cell_frames_are_frames() -> None:
    rc = fixture_cause("field5", "deepseek-ocr_232_no_module_deepseek_ocr_ipython.log")
    assert (rc.evidence, rc.origin) == ("traceback", "environment")
    rc = fixture_cause("field7", "vllm4mteb_2_llmengine_no_driver_worker_cell.log")
    assert (rc.evidence, rc.origin) == ("traceback", "caller")


def test_tritons_stub_at_list_gives_the_relayed_errors_frames() -> None:
    rc = fixture_cause("field4", "triton_8578_stat_loggers_kwarg.log")
    assert rc.message.endswith("'stat_loggers'") and "At:" not in rc.message
    assert (rc.origin, rc.package) == ("caller", "triton-vllm-backend")


# errors relayed, or quoted alone


@pytest.mark.parametrize(
    ("text", "typ", "message", "evidence"),
    [
        (
            "25-09-09 01:09:14|ERROR |guidellm.backend.openai:text_completions:306 - request "
            "failed: Server error '500 Internal Server Error' for url 'http://localhost:4000/v1'\n",
            "",
            "Server error '500 Internal Server Error' for url",
            "wrapper-message",
        ),
        (
            "Error: ModelFactory not initialized\n",
            "",
            "ModelFactory not initialized",
            "exception-line",
        ),
        (
            "[Error] (WrappedServer) vllm-server failed to start within timeout\n",
            "",
            "vllm-server failed to start within timeout",
            "wrapper-message",
        ),
        (
            "Fail to access model(VLLM/x).Completions.create() got an unexpected keyword "
            "argument 'unused'\n",
            "",
            "Completions.create() got an unexpected keyword argument 'unused'",
            "wrapper-message",
        ),
        (
            "【BUG】：RuntimeError: NPU out of memory. Tried to allocate 3.47 GiB\n",
            "RuntimeError",
            "NPU out of memory.",
            "exception-line",
        ),
        (
            "It resulted in the error: Unsupported connector type: AIBrixOffloadingConnectorV1.\n",
            "",
            "Unsupported connector type: AIBrixOffloadingConnectorV1",
            "exception-line",
        ),
        (
            "No module named 'vllm.transformers_utils.tokenizer'\n",
            "",
            "No module named",
            "exception-line",
        ),
        (
            '{"requestId": "r", "message": "Unexpected keyword argument \'use_beam_search\'", '
            '"level": "ERROR"}\n',
            "",
            "Unexpected keyword argument 'use_beam_search'",
            "wrapper-message",
        ),
        (
            "ERROR 10-14 22:29:52 [serving_chat.py:178] Error with model error=ErrorInfo("
            "message='The model `m` does not exist.', type='NotFoundError', param=None, "
            "code=404)\n",
            "NotFoundError",
            "The model `m` does not exist.",
            "wrapper-message",
        ),
        (
            "'vllm.entrypoints.openai.api_server' (ModuleNotFoundError: No module named 'vllm')\n",
            "ModuleNotFoundError",
            "No module named 'vllm'",
            "wrapper-message",
        ),
        (
            '"ImportError: /x/vllm/_C.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"\n',
            "ImportError",
            "/x/vllm/_C.so: undefined symbol:",
            "exception-line",
        ),
    ],
)
def test_relayed_and_lone_errors_are_read(
    tmp_path: Path, text: str, typ: str, message: str, evidence: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.evidence) == (typ, evidence)
    assert rc.message.startswith(message), rc.message


def test_a_warning_quoting_an_import_failure_is_no_cause_when_a_cut_stack_follows(
    tmp_path: Path,
) -> None:
    warning = (
        "WARNING 09-04 04:55:04 _core_ext.py:180] Failed to import from vllm._core_C with "
        "ImportError('/x/vllm/_core_C.abi3.so: undefined symbol: _ZN5torch')\n"
    )
    assert cause(tmp_path, warning).origin == "environment"
    note = no_cause(
        tmp_path,
        warning + 'Traceback (most recent call last):\n  File "/x/sglang/launch_server.py", '
        "line 6, in <module>\n    from sglang.srt.server import launch_server\n"
        '  File "/x/sglang/srt/server.py", line 44,\n',
    )
    assert note.startswith("unknown: a traceback is cut")


def test_a_harness_report_of_a_crashed_pod_is_that_pods_death(tmp_path: Path) -> None:
    rc = cause(
        tmp_path, "16:53:24 - ❌ Crashed container in pod: vllm-standalone-abc-845945945-dl\n"
    )
    assert (rc.evidence, rc.process, rc.origin) == (
        "death-line",
        "vllm-standalone-abc-845945945-dl",
        "unknown",
    )


def test_a_ray_actor_death_cut_after_its_class_is_still_that_actors_death() -> None:
    rc = fixture_cause("field5", "vllm_17770_ray_actor_died_account_cut.log")
    assert (rc.evidence, rc.process, rc.origin) == ("death-line", "RayWorkerWrapper", "unknown")


@pytest.mark.parametrize(
    ("text", "note"),
    [
        (
            "RuntimeError: Failed to load all the steps. Could not run pipeline.\n",
            "only wrappers",
        ),
        (
            "ray.exceptions.UserCodeException: Failed to process the following data block: {}\n",
            "only wrappers",
        ),
    ],
)
def test_frameworks_summaries_of_an_error_not_in_view_name_no_cause(
    tmp_path: Path, text: str, note: str
) -> None:
    assert note in no_cause(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        (
            "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': \"This "
            "model's maximum context length is 6048 tokens.\", 'type': 'BadRequestError', "
            "'param': None, 'code': 400}\n",
            "BadRequestError",
            "This model's maximum context length is 6048 tokens.",
        ),
        (
            "litellm.exceptions.APIConnectionError: litellm.APIConnectionError: VLLMException - "
            "Failed to load the model config.\n",
            "",
            "Failed to load the model config.",
        ),
        (
            'Exception: Request failed: 404, {"detail":"Not Found"}\n',
            "Exception",
            "Request failed: 404",
        ),
    ],
)
def test_a_clients_record_of_the_servers_error_is_read_as_its_quote(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.evidence) == (typ, "wrapper-message")
    assert rc.message.startswith(message)


@pytest.mark.parametrize(
    ("text", "prog", "message"),
    [
        (
            "Error: [bentoml-cli] `serve` failed: Invalid Tag _service:svc\n",
            "bentoml-cli serve",
            "Invalid Tag _service:svc",
        ),
        (
            "/usr/bin/entrypoint.sh: line 6: exec: --: invalid option\n",
            "/usr/bin/entrypoint.sh",
            "exec: --: invalid option",
        ),
    ],
)
def test_command_lines_refused_by_click_and_by_a_shell(
    tmp_path: Path, text: str, prog: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.process, rc.message) == ("cli-error", prog, message)


def test_rays_account_of_an_actors_death_pasted_alone_is_a_death(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "The actor is dead because its worker process has died. Worker exit type: "
        "SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error\n",
    )
    assert (rc.evidence, rc.type, rc.origin) == ("death-line", "", "unknown")
    created = "The actor is dead because of an error raised in its creation task\n"
    assert no_cause(tmp_path, created).startswith("unknown")


def test_the_openai_javascript_clients_http_status_is_a_record_of_the_servers(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "[NEST] 2025-03-31 16:26:46 error [Agent] Error: 400 status code (no body)\n"
        "    at Function.generate (/app/node_modules/openai/src/error.ts:72:14)\n",
    )
    assert (rc.type, rc.message, rc.evidence, rc.origin) == (
        "Error",
        "400 status code (no body)",
        "wrapper-message",
        "unknown",
    )
