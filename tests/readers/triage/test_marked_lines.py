"""An error's own line that the catalogue does not know, taken by its own marks where
nothing else in the log names a root cause (``alone.marked_alone``), and whose it is by
its message's words (``wording.by_words``). Lines are real pastes' shapes (their sources
in the comments); each is checked to be unknown to the catalogue, so the marks alone
decide."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import CATALOGUE, cause, fixture_cause, no_cause
from vllmdiag.readers.triage.causes import match
from vllmdiag.readers.triage.lookups import Frame
from vllmdiag.readers.triage.wording import by_words


def _unknown_to_catalogue(message: str, typ: str = "") -> None:
    assert match(CATALOGUE, typ, message, [], None) is None, message


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        # a typed error alone after a user's label (gpustack's ``Error log:``)
        (
            "Error log: ValueError: The quux loader refuses shard 3 of FooForCausalLM\n",
            "ValueError",
            "The quux loader refuses shard 3 of FooForCausalLM",
        ),
        # a sentence that runs into the typed error (a thread's opening words)
        (
            "when I start it I kept getting errors, TypeError: Foo.__init__() missing 1 "
            "required positional argument: 'bar'\n",
            "TypeError",
            "Foo.__init__() missing 1 required positional argument: 'bar'",
        ),
        # a user's quote of the typed error
        (
            'noob here, does this mean "AssertionError: the quux loader only reads v3 shards." ?\n',
            "AssertionError",
            "the quux loader only reads v3 shards.",
        ),
    ],
)
def test_a_typed_line_the_catalogue_does_not_know_is_the_error(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    _unknown_to_catalogue(message, typ)
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.type, rc.message, rc.process) == (
        "exception-line",
        typ,
        message,
        "main",
    )


def test_an_error_record_is_the_error_where_its_process_did_not_go_on(tmp_path: Path) -> None:
    # vLLM's engine's error record of a request it ended (vllm#26292's shape, other words)
    words = "Quux backend lost the state of request chatcmpl-1 at token 1. Please file an issue."
    _unknown_to_catalogue(words)
    rc = cause(
        tmp_path,
        "(EngineCore_DP0 pid=269) INFO 10-06 04:51:00 [core.py:90] Serving.\n"
        f"(EngineCore_DP0 pid=269) ERROR 10-06 04:51:05 [backend_xgrammar.py:165] {words}\n",
    )
    assert (rc.message, rc.process) == (words, "EngineCore_DP0 pid=269")


def test_a_record_that_labels_the_error_gives_the_words_after_the_label(tmp_path: Path) -> None:
    # Xinference's record of a chat request that ended with an error (inference#3054's shape)
    words = "You set quux=2 in `--limit-quux`, but passed 3 quux items in the same prompt."
    rc = cause(
        tmp_path,
        "2025-03-12 09:29:12,291 xinference.core.model 822191 ERROR    [request 7533] "
        f"Leave chat, error: {words}\n",
    )
    assert rc.message == words
    assert rc.origin == "config", rc.why  # a request past what the server was started with


def test_an_error_record_its_process_logged_on_after_is_not_what_ended_it(
    tmp_path: Path,
) -> None:
    # vLLM's record that a backend cannot be used, then its start-up going on (vllm#15853)
    note = no_cause(
        tmp_path,
        "ERROR 03-20 07:42:38 [utils.py:613] Cannot use FA version 2 is not supported due "
        "to FA3 is only supported on devices with compute capability >= 8\n"
        "INFO 03-20 07:42:38 [topk_topp_sampler.py:36] Using FlashInfer for top-p & top-k "
        "sampling.\n",
    )
    assert note.startswith("unknown:")


@pytest.mark.parametrize(
    "text",
    [
        # a frame's source line inside an error record, the paste cut below it
        "(EngineCore_DP0 pid=1) ERROR 10-01 00:00:00 [core.py:700]     self._init_executor()\n",
        # pip's note that the build's own output (not in view) holds the error
        "  error: subprocess-exited-with-error\n",
        # BuildKit's note that a step failed, its output not in view
        'ERROR: failed to solve: process "/bin/sh -c make" did not complete successfully: '
        "exit code: 1\n",
        # JAX's note that the exception follows (the paste cut before it)
        "(EngineCore pid=2) ERROR 04-30 01:11:39 [core.py:1136] For simplicity, JAX has "
        "removed its internal frames from the traceback of the following exception.\n",
        # LiteLLM's record that it goes on without a model's parameters (harmless)
        "ERROR:root:Failed to get supported params: argument of type 'NoneType' is not iterable\n",
    ],
)
def test_lines_that_point_elsewhere_or_went_on_are_never_the_error(
    tmp_path: Path, text: str
) -> None:
    assert no_cause(tmp_path, text).startswith("unknown:")


def test_uvs_marked_error_is_read_before_its_causes(tmp_path: Path) -> None:
    # uv's resolver: its ``×`` line is the error, the ``╰─▶`` lines under it its causes
    rc = cause(
        tmp_path,
        "  × No solution found when resolving dependencies for split (sys_platform ==\n"
        "  │ 'quux'):\n"
        "  ╰─▶ Because only foo<=1.0 is available and bar depends on foo>=2, we can conclude\n"
        "      that bar cannot be used.\n",
    )
    assert rc.message.startswith("No solution found when resolving dependencies for split")


def test_the_marked_reading_on_real_logs() -> None:
    # gpustack#568: a streaming client's error record, the only error in view
    rc = fixture_cause("field16", "gpustack_568_streaming_response_usage_key.log")
    assert rc.message == "Error processing streaming response: 'usage'"
    assert rc.origin == "unknown"  # no frame and no words that say whose it is


@pytest.mark.parametrize(
    ("message", "origin"),
    [
        # a combination of settings a check refuses (field19's held-out misses' wordings)
        ("fp8_e5m2 kv-cache is not supported with checkpoint KV scales.", "config"),
        ("GGUF quantization hasn't supported tensor parallelism yet.", "config"),
        ("data_parallel_rank is not applicable in headless mode", "config"),
        ('Model "bge-m3" does not support matryoshka representation', "config"),
        ("max_num_seqs (1024) exceeds available Mamba cache blocks (524)", "config"),
        ("max_num_batched_tokens must be <= 65528 when LoRA is enabled.", "config"),
        ("Unknown engine argument: task", "config"),
        # the machine and what is installed on it
        (
            "Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist",
            "environment",
        ),
        ("A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.2", "environment"),
        ("operator torchvision::nms does not exist", "environment"),
        ("Gloo connectFullMesh failed with connection refused", "environment"),
        # words naming the hardware, a build or an architecture: no setting's
        ("FlashInfer requires GPUs with sm75 or higher", None),
        ("This flash attention build does not support headdim not being a multiple of 32.", None),
        ("Model architectures ['FooForCausalLM'] are not supported for now.", None),
        # an invariant between two values, a refused connection: no one named
        ("block_size must be divisible by hash_block_size", None),
        ("connect error: Connection refused", None),
        # a library calling the failure its internal error; an article is no library
        ("FlashInfer Internal Error: Invalid configuration", "dependency"),
        ("An Internal Error occurred while serving the request", None),
    ],
)
def test_whose_fault_by_the_messages_words(message: str, origin: str | None) -> None:
    got = by_words(message, None)
    assert (got.origin if got is not None else None) == origin
    if got is not None and origin != "dependency":
        assert "no frame in view" in got.why


def test_words_never_override_a_frame_outside_vllm() -> None:
    # a library's own refusal: its frame decides (the words only read vLLM's checks)
    lib = Frame("dependency", "site-packages/quux/core.py", "check", "quux")
    assert by_words("bf16 is not supported with this quux", lib) is None
    vllm = Frame("vllm", "vllm/config.py", "verify", None)
    got = by_words("bf16 is not supported with this quux", vllm)
    assert got is not None and got.origin == "config" and "vLLM's own check" in got.why
