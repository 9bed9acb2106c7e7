"""Shapes of cut pastes whose root cause is still in view, each on an excerpt of a real
log (field4) and, where it is worth it, a synthetic variant: an exception class whose name
starts lower-case, an exception line a paste indented with its frames, a next exception
below a paste's elision mark, frames printed without the tag the exception line has, a
first line whose level word lost its head, torch elastic's exit code, an executor's note
that a process is dead, a native library's error line, and a framework's record of the
step that failed (no root cause by itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import CATALOGUE, cause
from vllmdiag.readers.triage import triage_file
from vllmdiag.readers.triage.causes import header_states_error
from vllmdiag.readers.triage.lines import normalise
from vllmdiag.readers.triage.traceback_model import Traceback

_TAG = "(EngineCore_0 pid=532339) "


def test_a_bindings_exception_named_lower_case_is_an_exception_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        _TAG + '  File "/usr/local/lib/python3.12/dist-packages/nixl/_api.py", line 266, in '
        "register_memory\n"
        + _TAG
        + "    self.agent.registerMem(reg_descs, handle_list)\n"
        + _TAG
        + "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND\n"
        + _TAG
        + "2025-08-07 04:48:56,523       ERROR worker.py:427 -- Unhandled error "
        "(suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::RayWorkerWrapper.execute_method()"
        " (pid=533576, ip=10.90.67.84)\n",
    )
    assert (rc.type, rc.message) == ("nixl._bindings.nixlBackendError", "NIXL_ERR_BACKEND")
    assert (rc.process, rc.evidence) == ("EngineCore_0 pid=532339", "traceback")


def test_a_lower_case_word_with_a_colon_is_still_no_exception(tmp_path: Path) -> None:
    log = tmp_path / "paste.log"
    log.write_text("note: nothing failed here\nsomething else\n")
    assert triage_file(log, CATALOGUE).root_cause is None


def test_rays_python_logger_record_is_peeled_after_its_tab() -> None:
    line = normalise(
        _TAG + "2025-08-07 04:48:56,523       ERROR worker.py:427 -- Unhandled error", 1
    )
    assert (line.record, line.text) == ("ERROR worker.py:427 --", "Unhandled error")


def test_an_exception_line_indented_with_its_frames_is_read(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        ">  2025-05-30 06:29:14.119 1 uvicorn.error ERROR:    Traceback (most recent call last):\n"
        '    File "/kserve/kserve/model_server.py", line 297, in _serve\n'
        "      await asyncio.gather(*self.servers)\n"
        '    File "/huggingfaceserver/huggingfaceserver/vllm/vllm_model.py", line 141, in '
        "start_engine\n"
        "      OpenAIServingChat(\n"
        "  TypeError: OpenAIServingChat.__init__() got an unexpected keyword argument "
        "'enable_reasoning'\n"
        "  During handling of the above exception, another exception occurred: \n"
        "  Traceback (most recent call last):\n"
        '    File "/usr/lib/python3.10/asyncio/queues.py", line 159, in get\n'
        "      await getter\n"
        "  asyncio.exceptions.CancelledError\n",
    )
    assert rc.type == "TypeError" and rc.message.startswith("OpenAIServingChat.__init__()")
    assert (rc.process, rc.evidence) == ("main", "traceback")


def test_an_exception_line_below_a_papers_elision_is_not_the_message(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "ValueError: While loading /x/checkpoint-100, expected target modules in ['qkv'] but "
        "received ['mlp1.1']. Please verify that the loaded LoRA module is correct\n"
        "...\n"
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
        "trace (above) for the root cause.\n",
    )
    assert rc.type == "ValueError"
    assert rc.message.endswith("LoRA module is correct"), rc.message


def test_frames_without_the_tag_of_the_exception_line_are_its_stack(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '  File "/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2522, '
        "in _run_ninja_build\n"
        "    raise RuntimeError(message) from e\n"
        "\n"
        "kserve-container (EngineCore_0 pid=58) RuntimeError: Error building extension "
        "'sampling':\n"
        "  FAILED: sampling.cuda.o\n"
        "kserve-container 2025-09-02 15:21:53.447 1 kse\n",
    )
    assert (rc.type, rc.process) == ("RuntimeError", "EngineCore_0 pid=58")
    assert rc.message.startswith("Error building extension 'sampling'")
    assert rc.evidence == "traceback" and rc.frames


def test_a_container_name_in_front_of_a_process_tag_is_peeled() -> None:
    line = normalise("kserve-container (EngineCore_0 pid=58) RuntimeError: boom", 1)
    assert (line.process, line.text) == ("EngineCore_0 pid=58", "RuntimeError: boom")
    assert normalise("some-words (not a tag) here", 1).text == "some-words (not a tag) here"


def test_a_first_line_whose_level_word_lost_its_head(tmp_path: Path) -> None:
    line = normalise("RROR 12-18 19:47:34 engine.py:366] ValueError: boom", 1)
    assert (line.level, line.text) == ("ERROR", "ValueError: boom")
    rc = cause(
        tmp_path,
        "RROR 12-18 19:47:34 engine.py:366] ValueError: Total number of attention heads (64) "
        "must be divisible by tensor parallel size (3).\n"
        "Process SpawnProcess-1:\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.11/multiprocessing/process.py", line 314, in _bootstrap\n'
        "    self.run()\n"
        '  File "/opt/conda/lib/python3.11/site-packages/vllm/engine/multiprocessing/engine.py",'
        " line 114, in f\n",
    )
    assert (rc.type, rc.evidence, rc.origin) == ("ValueError", "exception-line", "config")


@pytest.mark.parametrize(
    "line",
    [
        "E1224 14:08:10.053000 26834 torch/distributed/elastic/multiprocessing/api.py:874] "
        "failed (exitcode: -11) local_rank: 0 (pid: 26904) of binary: /usr/local/bin/python",
        "  traceback : Signal 11 (SIGSEGV) received by PID 26904",
    ],
)
def test_torch_elastics_report_of_a_killed_rank_is_a_death_line(tmp_path: Path, line: str) -> None:
    rc = cause(tmp_path, line + "\n")
    assert (rc.type, rc.evidence, rc.origin) == ("", "death-line", "unknown")


def test_an_executors_note_that_a_rank_is_dead_beats_the_stage_record(tmp_path: Path) -> None:
    tag = "(APIServer pid=150) ERROR 09-13 18:40:28 "
    rc = cause(
        tmp_path,
        tag + "[multiproc_executor.py:398] Rank 2 scheduler is dead. Please check if there "
        "are relevant logs.\n"
        + tag
        + "[multiproc_executor.py:400] Exit code: -9\n"
        + tag
        + "[stage_runtime.py:257] [StageRuntime] Stage initialization failed; shutting "
        "down 0 initialized client(s)\n" + tag + "[stage_runtime.py:257] Traceback (most recent "
        "call last):\n" + tag + '[stage_runtime.py:257]   File "/w/vllm_omni/engine/'
        'stage_runtime.py", line 244, in initialize\n',
    )
    assert rc.message.startswith("Rank 2 scheduler is dead.")
    assert (rc.evidence, rc.process, rc.origin) == ("death-line", "APIServer pid=150", "unknown")


def test_a_native_libraries_error_line_stands_when_the_traceback_is_cut(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "(LLMRayActor pid=347862) CUDA Error: out of memory at "
        "/workspace/csrc/cumem_allocator.cpp:62\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
        "    return _run_code(code, main_globals, None,\n"
        '  File "/home/jovyan/.cache/ray/session/working_dir_files/',
    )
    assert rc.message == "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62"
    assert (rc.evidence, rc.process) == ("death-line", "LLMRayActor pid=347862")


def test_an_exception_beats_a_native_error_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
    )
    assert rc.type == "torch.OutOfMemoryError"


@pytest.mark.parametrize(
    "head",
    [
        "[ERROR:swift] Method execution failed: infer",
        "[StageRuntime] Stage initialization failed; shutting down 0 initialized client(s)",
    ],
)
def test_a_frameworks_record_of_the_failed_step_is_no_root_cause(head: str) -> None:
    tb = Traceback("main", None, head, (), False, 2, 3, header_error=True)
    assert not header_states_error(tb)


def test_the_engine_cores_death_beats_the_frameworks_record_of_the_step(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "ERROR 01-29 08:37:48 [core_client.py:564] Engine core proc EngineCore_DP1 died "
        "unexpectedly, shutting down client.\n"
        "[ERROR:swift] Method execution failed: infer\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/swift/llm/infer/rollout.py", line 262,'
        " in llm_worker\n"
        "    result = method(*args, **kwargs)\n",
    )
    assert (rc.evidence, rc.process) == ("death-line", "EngineCore_DP1")
