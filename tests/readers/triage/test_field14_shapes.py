"""Readers and blame rules for what the thirteenth held-out corpus (``fixtures/logs/field14/``)
showed: torch elastic's report of a failed child, a frame glued to its exception line, a
launcher's host prefix, an error and its relay quoted one under the other, Ray's account
of a death pasted apart from the exception naming the actor, clients' bare statuses, and
checks whose words say whose the failure is. Each on a minimal excerpt of the real shape,
and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause, no_cause

ELASTIC = """\
  File "/env/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 269, in f
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/usr/local/lib/python3.11/site-packages/swift/cli/rlhf.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-04-12_20:17:38
  rank      : 1 (local_rank: 1)
  exitcode  : -6 (pid: 20297)
  traceback : Signal 6 (SIGABRT) received by PID 20297
============================================================
"""


def test_torch_elastics_report_names_the_child_that_died(tmp_path: Path) -> None:
    rc = cause(tmp_path, ELASTIC)
    assert (rc.evidence, rc.process, rc.message) == (
        "death-line",
        "rank1 pid=20297",
        "Signal 6 (SIGABRT) received by PID 20297",
    )
    assert rc.origin == "unknown"


def test_a_frame_glued_to_its_source_and_exception_line_is_a_traceback(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'opencompass/configs/models/hf_llama/vllm_llama_series.py", line 13, in <module>     '
        "('llama-3.1-8b-instruct-vllm', 'meta-llama/Meta-Llama-3.1-8B-Instruct', 1) "
        "TypeError: 'tuple' object is not callable\n",
    )
    assert (rc.type, rc.evidence, rc.origin, rc.package) == (
        "TypeError",
        "traceback",
        "caller",
        "opencompass",
    )


def test_a_launchers_host_prefix_is_peeled(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "29.127.65.230: [rank0]: if self.state.global_step != self._last_loaded_step:\n"
        "29.127.65.230: [rank0]: AttributeError: 'Trainer' object has no attribute 'x'\n",
    )
    assert (rc.type, rc.process) == ("AttributeError", "rank0")


def test_an_error_above_its_relay_is_the_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "torch.AcceleratorError: CUDA error: no kernel image is available for execution on "
        "the device\n"
        "   RuntimeError: Worker failed with error 'CUDA error: no kernel image is available "
        "for execution on the device'\n",
    )
    assert (rc.type, rc.evidence, rc.origin) == (
        "torch.AcceleratorError",
        "exception-line",
        "environment",
    )


def test_a_bare_assertion_under_its_unindented_statement(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "assert all(vocab_sizes[0] == vocab_size for vocab_size in vocab_sizes)\n"
        "AssertionError\nProcess SpawnProcess-1?\n",
    )
    assert (rc.type, rc.message, rc.evidence) == ("AssertionError", "", "exception-line")


def test_frames_under_a_users_label_are_the_quoted_errors() -> None:
    rc = fixture_cause("field14", "vllm-ascend_16_vllm_all_reduce_cpu_backend.log")
    assert (rc.type, rc.origin) == ("NotImplementedError", "vllm"), rc.why


def test_rays_account_above_the_exception_naming_the_actor_is_that_actors() -> None:
    rc = fixture_cause("field14", "simplerl-reason_98_raysubmit_workerdict_actor_died.log")
    assert (rc.evidence, rc.process) == ("death-line", "WorkerDict pid=71876")
    assert rc.message.startswith("The actor is dead because its worker process has died.")


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        (
            "raise self._make_status_error_from_response(err.response) from None\n"
            "openai.InternalServerError: Error code: 500\n",
            "openai.InternalServerError",
            "Error code: 500",
        ),
        (
            "Exception litellm.APIError: APIError: Hosted_vllmException - Connection error\n",
            "",
            "Connection error",
        ),
        (
            "ERROR 04-28 16:10:09 camem.py:69] Failed to import vllm_ascend_C:No module named "
            "'vllm_ascend.vllm_ascend_C'\n",
            "",
            "No module named 'vllm_ascend.vllm_ascend_C'",
        ),
    ],
)
def test_relays_give_what_they_relay(tmp_path: Path, text: str, typ: str, message: str) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.message, rc.evidence) == (typ, message, "wrapper-message")


def test_a_body_relaying_a_wrapper_is_no_root_cause(tmp_path: Path) -> None:
    no_cause(
        tmp_path,
        '{"object":"error","message":"EngineCore encountered an issue. See stack trace '
        '(above) for the root cause.","type":"InternalServerError","param":null,"code":500}\n',
    )


def test_argparse_names_a_subcommand_with_placeholders(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "vllm bench <bench_type> [options] serve: error: argument --dataset-name: invalid "
        "choice: 'sharegpt' (choose from random)\n",
    )
    assert (rc.evidence, rc.process, rc.origin) == (
        "cli-error",
        "vllm bench <bench_type> [options] serve",
        "config",
    )


def test_mmengines_registry_only_carries_the_frameworks_call() -> None:
    rc = fixture_cause("field14", "opencompass_1207_vllm_init_unexpected_end_str.log")
    assert (rc.origin, rc.package) == ("caller", "opencompass"), rc.why


def test_vllms_cached_tokenizer_lacking_what_it_reads_is_the_installed_pair(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "AttributeError: 'CachedPreTrainedTokenizerFast' object has no attribute "
        "'default_chat_template'\n",
    )
    assert rc.origin == "environment", rc.why
