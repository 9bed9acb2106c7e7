"""Readers and blame rules for what the tenth held-out corpus (``fixtures/logs/field11/``)
showed: IPython's traceback header, relaying lines of serving platforms and applications,
emphasis behind a process tag, console scripts pip wrote, and checks whose words say whose
the failure is. Each on a minimal excerpt of the real shape, and on the fixture it was
found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause, no_cause
from vllmdiag.readers.triage.origin import classify


def test_ipythons_header_opens_a_traceback_its_frames_belong_to() -> None:
    rc = fixture_cause("field11", "deepseek-r1-playground_1_colab_timeoutexpired_vllm_serve.log")
    assert (rc.type, rc.evidence, rc.origin) == ("TimeoutExpired", "traceback", "unknown")
    assert rc.message.startswith("Command '['vllm', 'serve',")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "Failed to start model server: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "
            '"../c10/cuda/CUDACachingAllocator.cpp":844, please report a bug to PyTorch.\n',
            "NVML_SUCCESS == r INTERNAL ASSERT FAILED at",
        ),
        (
            "2025-03-17 17:21:07.954 | ERROR    | app.llm:ask_tool:432 - API error: Connection "
            "error.\n",
            "Connection error.",
        ),
    ],
)
def test_a_platforms_or_applications_relay_gives_the_error_it_relays(
    tmp_path: Path, text: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert rc.message.startswith(message)
    assert (rc.evidence, rc.origin) == ("wrapper-message", "unknown")


def test_an_applications_relay_of_an_openai_body_gives_the_bodys_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "2025-03-09 17:31:06.249 | ERROR    | app.llm:ask_tool:260 - API error: Error code: "
        "400 - {'object': 'error', 'message': '\"auto\" tool choice requires "
        "--enable-auto-tool-choice and --tool-call-parser to be set', 'type': "
        "'BadRequestError', 'param': None, 'code': 400}\n",
    )
    assert (rc.type, rc.origin) == ("BadRequestError", "config")


def test_emphasis_behind_a_process_tag_is_the_pastes(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "[rank1]: **RuntimeError: world_size (8) is not equal to tensor_model_parallel_size "
        "(4) x pipeline_model_parallel_size (1)**\n",
    )
    assert (rc.type, rc.process, rc.origin) == ("RuntimeError", "rank1", "config")
    assert rc.message.endswith("pipeline_model_parallel_size (1)")


def test_an_error_named_in_a_users_sentence_keeps_its_type(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "which throws error: ValueError: Model architectures ['LlavaForCausalLM'] are not "
        "supported for now. Supported architectures: ['AquilaModel']\n",
    )
    assert (rc.type, rc.origin) == ("ValueError", "environment")


def test_a_warning_record_of_another_logger_is_never_the_error_alone(tmp_path: Path) -> None:
    note = no_cause(
        tmp_path,
        "[rank0]:[W1121 13:28:05.542 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process "
        "group has NOT been destroyed before we destruct ProcessGroupNCCL.\n",
    )
    assert note.startswith("unknown:")


@pytest.mark.parametrize(
    "path",
    [
        r"C:\Users\S\AppData\Local\Programs\Python\Python313\Scripts\vllm.exe\__main__.py",
        "/home/x/miniconda3/envs/vllm/bin/vllm",
    ],
)
def test_a_console_script_pip_wrote_only_carries_the_call(path: str) -> None:
    assert classify(path) == (None, None)


def test_a_projects_own_script_in_a_bin_folder_is_its_code() -> None:
    assert classify("/usr/local/bin/start-vllm") == ("user", None)


def test_vllms_module_missing_behind_its_console_script_is_the_install() -> None:
    rc = fixture_cause("field11", "fara_29_no_module_vllm_entrypoints_windows.log")
    assert rc.origin == "environment"


def test_a_call_vllm_declines_is_the_callers(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/w/ms-swift/swift/llm/infer/rollout.py", line 146, in async_llm_worker\n'
        "    result = await method(*args, **kwargs)\n"
        '  File "/x/site-packages/vllm/engine/async_llm_engine.py", line 535, in '
        "collective_rpc_async\n"
        "    raise NotImplementedError\n"
        "NotImplementedError\n",
    )
    assert (rc.origin, rc.package) == ("caller", "swift")


def test_vllms_own_not_implemented_deeper_in_vllm_stays_vllms(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/vllm/worker/model_runner.py", line 9, in run\n'
        "    self.model.sample()\n"
        '  File "/x/site-packages/vllm/model_executor/models/opt.py", line 3, in sample\n'
        "    raise NotImplementedError\n"
        "NotImplementedError\n",
    )
    assert rc.origin == "vllm"


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        (
            "Invalid argument: unable to find 'libtriton_vllm.so' for model 'vllm_model'\n",
            "environment",
        ),
        (
            "openai_harmony.HarmonyError: Unexpected token 200002 while expecting start token "
            "200006\n",
            "unknown",
        ),
    ],
)
def test_the_checks_words_say_whose_it_is(tmp_path: Path, text: str, origin: str) -> None:
    assert cause(tmp_path, text).origin == origin


def test_a_bare_exception_has_no_message_to_take_from_the_next_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/vllm/transformers_utils/config.py", line 655, in load\n'
        "    assert isinstance(config_dict, dict)\n"
        "AssertionError\n"
        "Process finished with exit code 1\n",
    )
    assert (rc.type, rc.message) == ("AssertionError", "")


def test_a_type_alone_with_its_colon_takes_the_message_below(tmp_path: Path) -> None:
    rc = cause(tmp_path, "ImportError:\ncannot import name 'X' from 'vllm.utils'\n")
    assert (rc.type, rc.message) == ("ImportError", "cannot import name 'X' from 'vllm.utils'")
