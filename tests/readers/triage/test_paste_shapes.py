"""Readers for the log shapes of the held-out corpus (``fixtures/logs/field2``): each on a
minimal excerpt of the real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

from tests.support.triage import cause, fixture_cause, triage_text
from vllmdiag.readers.triage.deaths import classify
from vllmdiag.readers.triage.lines import normalise, unglue

# markdown a paste wraps a line in, or glues in front of it


def test_markdown_bold_exception_line_is_read_without_its_stars(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '  File "/x/site-packages/vllm/entrypoints/llm.py", line 210, in __init__\n'
        "    engine_args = EngineArgs(\n"
        "**TypeError: EngineArgs.__init__() got an unexpected keyword argument 'w'**\n",
    )
    assert (rc.type, rc.message) == (
        "TypeError",
        "EngineArgs.__init__() got an unexpected keyword argument 'w'",
    )
    fx = fixture_cause("field2", "lighteval_532_bold_exception_line_repeated.log")
    assert fx.message.endswith("'worker_use_ray'")  # neither stars nor the cut "(pi"


def test_backticked_exception_line_is_read(tmp_path: Path) -> None:
    rc = cause(tmp_path, "`ValueError: Free memory on device (0.49/79.32 GiB) on startup`\n")
    assert (rc.type, rc.message) == (
        "ValueError",
        "Free memory on device (0.49/79.32 GiB) on startup",
    )
    assert fixture_cause("field2", "omni_276_free_memory_backticked.log").type == "ValueError"


def test_stars_glued_before_a_process_tag_are_peeled() -> None:
    line = normalise("****(EngineCore_DP0 pid=1804) RuntimeError: Worker failed with error 'x'", 1)
    assert line.process == "EngineCore_DP0 pid=1804"
    assert line.text.startswith("RuntimeError: Worker failed")
    fx = fixture_cause("field2", "ascend_6242_stars_glued_worker_failed_cut.log")
    assert fx.evidence == "wrapper-message" and fx.message.startswith(
        "Command '['/usr/bin/clang++'"
    )


def test_a_line_that_is_only_stars_or_code_is_left_alone() -> None:
    assert normalise("**kwargs)", 1).text == "**kwargs)"  # never closed: not markup
    assert normalise("    **kwargs,", 1).text == "    **kwargs,"


# a paste whose line breaks were lost


def test_glued_records_of_one_process_are_split_back() -> None:
    raw = (
        '(APIServer pid=7)   File "/x/_http.py", line 453, in f(APIServer pid=7)     raise E'
        "(APIServer pid=7) huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error."
    )
    parts = unglue(raw)
    assert len(parts) == 3 and all(p.startswith("(APIServer pid=7)") for p in parts)
    assert parts[2].endswith("401 Client Error.")


def test_one_tag_quoted_inside_a_line_is_not_a_split() -> None:
    raw = "ray.exceptions.RayTaskError(TypeError): ray::f() (pid=718457, ip=10.1.2.3)"
    assert unglue(raw) == [raw]
    nested = "(APIServer pid=32) (EngineCore_0 pid=296) WARNING 09-07 11:25:27 [x.py:1] w"
    assert unglue(nested) == [nested]


def test_lost_line_breaks_fixture_names_the_hub_error_and_its_process() -> None:
    rc = fixture_cause("field2", "vastai_128_line_breaks_lost_hub_401.log")
    assert rc.type == "huggingface_hub.errors.RepositoryNotFoundError"
    assert rc.process == "APIServer pid=2960"
    assert "Repository Not Found for url: https://huggingface.co/Qwen/" in rc.message


# huggingface_hub's messages have a blank line inside


def test_hub_error_message_goes_on_after_its_blank_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/x/huggingface_hub/utils/_http.py", line 409, in hf_raise_for_status\n'
        "    raise _format(GatedRepoError, message, response) from e\n"
        "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6)\n"
        "\n"
        "Cannot access gated repo for url https://huggingface.co/meta-llama/x/config.json.\n"
        "\n"
        "Next: something else\n",
    )
    assert rc.message.startswith("401 Client Error.")
    assert "Cannot access gated repo" in rc.message
    assert "something else" not in rc.message  # one blank line, not every one


def test_other_messages_still_end_at_a_blank_line(tmp_path: Path) -> None:
    rc = cause(tmp_path, "Traceback (most recent call last):\nValueError: bad\n\nunrelated\n")
    assert rc.message == "bad"


# Ray's own daemons and its memory monitor


def test_raylet_tag_and_its_cxx_logger_are_peeled() -> None:
    line = normalise(
        "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: "
        "1 Workers (tasks / actors) killed due to memory pressure (OOM)",
        1,
    )
    assert line.process == "raylet"
    assert line.text.startswith("1 Workers (tasks / actors) killed")
    assert normalise("(raylet, ip=10.0.0.2) A worker died", 1).process == "raylet"


def test_ray_memory_monitor_kill_is_the_death(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "(raylet) [2025-04-02 15:02:00,117 E 1 1] (raylet) node_manager.cc:3069: 1 Workers "
        "(tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to "
        "other reasons at node\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n',
    )
    assert (rc.evidence, rc.process) == ("death-line", "raylet")
    assert rc.message.startswith("1 Workers (tasks / actors) killed due to memory pressure")


def test_zero_workers_killed_is_no_death(tmp_path: Path) -> None:
    t = triage_text(
        tmp_path,
        "(raylet) 0 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers "
        "crashed due to other reasons\n",
    )
    assert t.root_cause is None


def test_syslog_octal_colours_and_a_hard_wrapped_report() -> None:
    line = normalise("#033[2m#033[33m(raylet)#033[0m [DATE] (raylet) node_manager.cc:3007: x", 1)
    assert line.process == "raylet"
    rc = fixture_cause("field2", "vllm_1160_syslog_escaped_raylet_oom_wrapped.log")
    assert (rc.process, rc.message) == ("raylet", "2 Workers (tasks /")


def test_fatal_signal_line_of_newer_vllm_is_a_strong_death(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "(LLMRayActor pid=10) CRITICAL 04-21 10:43:16 [core_client.py:361] Got fatal signal "
        "from worker processes, shutting down. See stack trace above for root cause issue.\n"
        "(raylet) A worker died or was killed while executing a task by an unexpected system "
        "error.\n",
    )
    assert rc.process == "LLMRayActor pid=10"
    assert rc.message.startswith("Got fatal signal")


# a container whose init cannot start the command


def test_container_init_exec_failure_is_the_death(tmp_path: Path) -> None:
    rc = cause(tmp_path, "ERROR (catatonit:2): failed to exec pid1: No such file or directory\n")
    assert (rc.evidence, rc.message) == (
        "death-line",
        "failed to exec pid1: No such file or directory",
    )
    tini = classify(normalise("[FATAL tini (7)] exec vllm failed: No such file or directory", 1))
    assert tini is not None and tini.message.startswith("[FATAL tini (7)] exec vllm failed")
    assert (
        fixture_cause("field2", "ramalama_2214_catatonit_exec_failed.log").evidence == "death-line"
    )


# the error a relaying process quotes


def test_relayed_engine_death_names_the_original_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/x/serving_chat.py", line 503, in chat_completion_stream_generator\n'
        "    async for res in result_generator:\n"
        "ValueError: a python exception was caught while processing the async generator: "
        "MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the "
        "original error: RuntimeError('Aborted due to the lack of CPU swap space.').\n",
    )
    assert (rc.evidence, rc.type, rc.message) == (
        "wrapper-message",
        "RuntimeError",
        "Aborted due to the lack of CPU swap space.",
    )


def test_a_line_relaying_the_same_exception_is_not_its_message(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/root/vllm.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'vllm.engine'\n"
        "Runner failed with exception: ModuleNotFoundError(\"No module named 'vllm.engine'\")\n",
    )
    assert rc.message == "No module named 'vllm.engine'"


def test_an_elision_mark_is_not_the_message(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'File "/x/vllm/attention/backends/abstract.py", line 59, in get_state_cls\n'
        "    raise NotImplementedError\n"
        "NotImplementedError\n"
        "...\n"
        "CRITICAL [core_client.py:269] Got fatal signal from worker processes, shutting down.\n",
    )
    assert (rc.type, rc.message) == ("NotImplementedError", "")


# the error logged right above a traceback the paste cut


def test_error_logged_above_a_cut_traceback_is_the_root_cause(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "2024-10-25 12:21:14,974 xinference.api.restful_api 37502 ERROR    [address=1.2.3.4:5, "
        "pid=43525] Timed out after 601 seconds waiting for clients. 1/2 clients joined.\n"
        "Traceback (most recent call last):\n"
        '  File "/x/xinference/api/restful_api.py", line 977, in launch_model\n'
        "    model_uid = await (await self._get_supervisor_ref()).launch_builtin_model(\n",
    )
    assert (rc.evidence, rc.type) == ("traceback", "")
    assert rc.message.startswith("[address=1.2.3.4:5, pid=43525] Timed out after 601 seconds")


def test_logged_record_above_a_raw_traceback_counts(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "ERROR 2025-07-21 14:34:24.934 factory.py:62] Bfloat16 is only supported on GPUs with "
        "compute capability of at least 8.0.\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/nim/factory.py", line 51, in nim_run_mp_engine\n',
    )
    assert rc.message.startswith("Bfloat16 is only supported")


def test_validation_body_above_a_cut_traceback_is_typed_as_pydantics() -> None:
    rc = fixture_cause("field2", "xinference_4561_validation_header_cut.log")
    assert rc.type == "pydantic_core._pydantic_core.ValidationError"
    assert rc.message.startswith("You can update Transformers")


def test_stock_announcements_and_context_lines_above_a_cut_traceback_are_not_causes(
    tmp_path: Path,
) -> None:
    for head in (
        "ERROR 05-18 12:25:44 [core.py:489] EngineCore failed to start.",
        "2026-03-20 15:32:02,236 ERROR    52 OpenAI async completion",
        "ERROR:    Exception in ASGI application",
        "WARNING 05-18 12:25:44 [x.py:1] No module named 'foo'",  # a warning: it went on
    ):
        t = triage_text(
            tmp_path,
            f'{head}\nTraceback (most recent call last):\n  File "/x/y.py", line 1, in f\n',
        )
        assert t.root_cause is None, head
        assert t.note is not None and t.note.startswith("unknown:")


def test_a_line_further_up_is_not_the_header(tmp_path: Path) -> None:
    t = triage_text(
        tmp_path,
        "Compute log probs: failed 3 of 320\n"
        "(raylet) x\n(raylet) y\n(raylet) z\n"
        'Traceback (most recent call last):\n  File "/x/y.py", line 1, in f\n',
    )
    assert t.root_cause is None


# Ray task errors whose remote traceback is cut, and vLLM's fatal-error announcement


def test_plain_ray_task_error_with_its_remote_traceback_cut_is_a_wrapper(tmp_path: Path) -> None:
    t = triage_text(
        tmp_path,
        "(EngineCore_DP0 pid=1088) ERROR 12-17 23:28:01 [core.py:866] ray.exceptions.RayTask"
        "Error: ray::RayWorkerWrapper.execute_method() (pid=285, ip=192.168.177.12)\n"
        '(EngineCore_DP0 pid=1088) ERROR 12-17 23:28:01 [core.py:866]   File "/x/vllm/v1/'
        'worker/worker_base.py", line 345, in execute_method\n',
    )
    assert t.root_cause is None
    assert t.note is not None and t.note.startswith("unknown: only wrappers")


def test_remote_traceback_of_a_headless_task_error_is_read_with_its_frames() -> None:
    # no 'Traceback' header is in view, but the remote exception's own frames are
    rc = fixture_cause("field2", "lmeval_2706_raytaskerror_relay_then_typeerror.log")
    assert (rc.type, rc.evidence, rc.process) == ("TypeError", "traceback", "main")


def test_actor_creation_task_death_with_its_traceback_cut_names_no_cause(tmp_path: Path) -> None:
    t = triage_text(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/share/OpenRLHF/openrlhf/trainer/ray/vllm_engine.py", line 120, in <module>\n'
        "    output = ray.get(llm.generate.remote('x'))\n"
        "ray.exceptions.ActorDiedError: The actor died because of an error raised in its "
        "creation task, ray::LLMRayActor.__init__() (pid=236832, ip=0.0.0.0)\n"
        '  File "/share/OpenRLHF/openrlhf/trainer/ray/vll',
    )
    assert t.root_cause is None


def test_fatal_error_announcement_above_its_own_cut_traceback_is_no_cause(tmp_path: Path) -> None:
    t = triage_text(
        tmp_path,
        "name-6c8f9c4df6-vh88z vllm (EngineCore_DP0 pid=296) ERROR 10-27 22:25:30 [core.py:710] "
        "EngineCore encountered a fatal error.\n"
        "name-6c8f9c4df6-vh88z vllm (EngineCore_DP0 pid=296) ERROR 10-27 22:25:30 [core.py:710] "
        "Traceback (most recent call last):\n"
        "name-6c8f9c4df6-vh88z vllm (EngineCore_DP0 pid=296) ERROR 10-27 22:25:30 [core.py:710] "
        '  File "/opt/vllm/v1/engine/core.py", line 701, in run_engine_core\n',
    )
    assert t.root_cause is None


def test_pod_name_and_container_are_peeled() -> None:
    line = normalise(
        "ms-pd-decode-6c8f9c4df6-vh88z vllm (APIServer pid=1) INFO 10-27 22:25:30 [api.py:1] x", 1
    )
    assert (line.process, line.level) == ("APIServer pid=1", "INFO")
    assert normalise("[pod/vllm-0-abcde/vllm] (APIServer pid=1) x", 1).process == "APIServer pid=1"


# errors the processes around vLLM relay on one line


def test_failure_phrase_quoting_a_typed_error_is_read_as_a_wrapper(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "I1115 02:58:49.477216 1 pb_stub.cc:325] Failed to initialize Python stub: TypeError: "
        "'NoneType' object is not subscriptable\n\nAt:\n  /opt/x/model.py(75): initialize\n",
    )
    assert (rc.evidence, rc.type, rc.message) == (
        "wrapper-message",
        "TypeError",
        "'NoneType' object is not subscriptable",
    )
    rc = cause(
        tmp_path,
        "Failed to import python 'vllm' module. Are we running in the correct venv? "
        "AttributeError: class must define a '_type_' attribute\n",
    )
    assert (rc.type, rc.message) == ("AttributeError", "class must define a '_type_' attribute")


def test_a_servers_failed_to_start_record_is_read_only_at_error_level(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "2024-07-01 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start "
        "model server: integer division or modulo by zero\n",
    )
    # KServe's relay of the error: the error's own words are the message
    assert (rc.message, rc.evidence) == ("integer division or modulo by zero", "wrapper-message")
    t = triage_text(tmp_path, "INFO 07-01 07:28:04 [x.py:1] Failed to load plugin foo: retrying\n")
    assert t.root_cause is None


def test_chinese_failure_phrase_gives_its_reason(tmp_path: Path) -> None:
    rc = cause(tmp_path, "模型加载失败: Using V1 LLMEngine, but envs.VLLM_USE_V1=False.\n")
    assert rc.message == "Using V1 LLMEngine, but envs.VLLM_USE_V1=False."


def test_relayed_request_length_error_of_vllm(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "\"This model's maximum context length is 8192 tokens. However, you requested 8598 "
        'tokens (3478 in the messages, 5120 in the completion). Please reduce the length.", '
        "'type': 'BadRequestError', 'param': None, 'code': 400.\n",
    )
    assert rc.type == "BadRequestError"
    assert rc.message.startswith("This model's maximum context length is 8192 tokens.")
    assert rc.message.endswith("Please reduce the length.")


def test_clap_command_line_error_is_a_cli_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "(setup pid=1293) error: unexpected argument '--torch-backend' found\n"
        "(setup pid=1293)   tip: a similar argument exists: '--no-cache'\n",
    )
    assert (rc.evidence, rc.message, rc.process) == (
        "cli-error",
        "unexpected argument '--torch-backend' found",
        "setup pid=1293",
    )


# stacks pasted without their header or exception line


def test_error_message_pasted_above_its_frames(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "'LLMEngine' object has no attribute 'model_executor'\n"
        '  File "/root/dpo/online_dpo.py", line 270, in _generate_vllm\n'
        "    llm_model = self.llm.llm_engine.model_executor.driver_worker\n\n    ...\n",
    )
    assert (rc.evidence, rc.type) == ("exception-line", "")
    assert rc.message == "'LLMEngine' object has no attribute 'model_executor'"


def test_frames_under_a_plain_line_are_no_cause(tmp_path: Path) -> None:
    t = triage_text(
        tmp_path,
        'Loading the model now\n  File "/root/x.py", line 2, in f\n    g()\n',
    )
    assert t.root_cause is None


def test_source_line_that_lost_its_indent_is_not_the_exception(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        "generation_kwargs.update(self.args.generation_kwargs)\n"
        "TypeError: 'NoneType' object is not iterable\n"
        "    ...\n",
    )
    assert (rc.type, rc.message) == ("TypeError", "'NoneType' object is not iterable")


def test_error_quoted_as_one_escaped_string_is_its_last_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'E1027 15:54:53.431777 1342 model.py:502] "[vllm] Error generating stream: \\u001B[36m'
        "ray::RayWorkerWrapper.execute_method()\\u001B[39m (pid=123, ip=10.0.0.1)\\n  At least "
        "one of the input arguments for this task could not be computed:\\nray.exceptions."
        "RaySystemError: System error: No module named 'utils'\"\n",
    )
    assert (rc.evidence, rc.type, rc.message, rc.process) == (
        "wrapper-message",
        "ray.exceptions.RaySystemError",
        "System error: No module named 'utils'",
        "RayWorkerWrapper pid=123",
    )


# what a log deduplicator adds, and a relaying process


def test_rays_repeated_suffix_is_not_part_of_the_message(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "(RayWorkerWrapper pid=5) ValueError: The model's max seq len (4096) is larger than the "
        "maximum number of tokens that can be stored in KV cache (3664). [repeated 7x across "
        "cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable.)\n",
    )
    assert rc.message.endswith("stored in KV cache (3664).")
    assert rc.process == "RayWorkerWrapper pid=5"


def test_syslogs_message_repeated_wrapper_is_unwrapped() -> None:
    line = normalise("message repeated 3 times: [ RuntimeError: CUDA error: out of memory]", 1)
    assert line.text == "RuntimeError: CUDA error: out of memory"


def test_rays_unhandled_error_names_the_task_that_raised_not_the_relaying_actor(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "(ActorModelRayActor pid=700388) Unhandled error (suppress with "
        "'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::LLMRayActor.init_process_group() (pid=700386, "
        "ip=0.0.0.0)\n"
        '(ActorModelRayActor pid=700388) File "/x/vllm/entrypoints/llm.py", line 495, in f\n'
        "(ActorModelRayActor pid=700388) executor = self.llm_engine.model_executor\n"
        "(ActorModelRayActor pid=700388) AttributeError: 'LLMEngine' object has no attribute "
        "'model_executor'\n",
    )
    assert (rc.type, rc.process, rc.evidence) == (
        "AttributeError",
        "LLMRayActor pid=700386",
        "traceback",  # its frames are in view, the header is not
    )


def test_a_signal_handlers_notice_its_process_logs_on_after_is_no_death(tmp_path: Path) -> None:
    t = triage_text(
        tmp_path,
        "[mlp-dgx-01:45435:0:45788] Caught signal 11 (Segmentation fault: address not mapped "
        "to object at address 0x7f48000689dc)\n"
        "INFO 05-18 12:25:44 [kv_cache_utils.py:637] GPU KV cache size: 442,160 tokens\n",
    )
    assert t.root_cause is None
    rc = cause(
        tmp_path,
        "INFO 05-18 12:25:43 [gpu_model_runner.py:1521] Model loading took 14.9889 GiB\n"
        "[mlp-dgx-01:45435:0:45788] Caught signal 11 (Segmentation fault: address not mapped "
        "to object at address 0x7f48000689dc)\n",
    )
    assert rc.evidence == "death-line"  # nothing after it: it may be the death


def test_a_validation_errors_body_line_alone_is_the_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "It got the following error:\n"
        "Value error, User-specified max_model_len (131072) is greater than the derived "
        "max_model_len (max_position_embeddings=32768.0 or model_max_length=None in model's "
        "config.json). [type=value_error, input_value=ArgsKwargs((), {'model': ...}), "
        "input_type=ArgsKwargs]\n",
    )
    assert (rc.evidence, rc.type) == (
        "exception-line",
        "pydantic_core._pydantic_core.ValidationError",
    )
    assert rc.message.startswith("Value error, User-specified max_model_len (131072)")
