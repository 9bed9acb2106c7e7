"""Readers and blame rules for what the ninth held-out corpus (``fixtures/logs/field10/``)
showed: exception lines whose message is on the lines below them, tags a paste cut or
broke, death reports of the shell and of Ray without an actor's name, pip's report of
what an install broke, build tools' own errors, and transformers' nested import errors.
Each on a minimal excerpt of the real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause

# messages on the lines below their type, and messages a paste broke


def test_an_exception_typed_alone_takes_its_message_from_the_lines_below(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "Failed to import VLLM Rollout. Please make sure vllm is installed.\n\nImportError:\n"
        "cannot import name 'Fp8LinearOp'\nfrom vllm.model_executor.layers.quantization\n",
    )
    assert (rc.type, rc.evidence) == ("ImportError", "exception-line")
    assert rc.message.startswith("cannot import name 'Fp8LinearOp'")
    assert rc.origin == "environment"  # no frame shows who asked for the name


def test_an_indented_message_below_its_type_keeps_its_paragraphs() -> None:
    rc = fixture_cause("field10", "wildguard_1_freeze_support_bootstrapping.log")
    assert rc.type == "RuntimeError"
    assert rc.message.startswith("An attempt has been made to start a new process before the")
    assert "you have forgotten to use the proper idiom" in rc.message
    assert (rc.origin, rc.package) == ("caller", None)


def test_a_message_a_paste_broke_mid_word_is_joined_again(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "(Worker_DP0_EP0 pid=7) ERROR 10-16 17:22:56 [nixl_connector.py:815] RuntimeError: "
        "Remote NIXL agent engine ID mismatch. Expected 46126a31-6b81\n"
        "-435d-a116-e3e34a76ded3_dp0,received 96b1c4ff-9edf_dp0.\n"
        "(Worker_DP0_EP0 pid=7) ERROR 10-16 17:22:56 [nixl_connector.py:827] Handshake failed\n",
    )
    assert rc.process == "Worker_DP0_EP0 pid=7"
    assert rc.message.endswith(
        "Expected 46126a31-6b81-435d-a116-e3e34a76ded3_dp0,received 96b1c4ff-9edf_dp0."
    )


def test_a_message_ending_a_sentence_takes_no_untagged_line_after_it(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "(EngineCore_DP0 pid=7) ValueError: No available memory for the cache blocks.\ndone\n",
    )
    assert rc.message == "No available memory for the cache blocks."


def test_the_tag_a_paste_cut_off_the_exception_line_is_the_next_lines() -> None:
    rc = fixture_cause("field10", "hunyuanimage-3.0_54_hunyuanimage3_arch_not_supported.log")
    assert (rc.process, rc.origin) == ("APIServer pid=619068", "environment")
    assert "Model architectures ['HunyuanImage3ForCausalMM'] are not supported" in rc.message


def test_a_pydantic_line_goes_on_until_its_type_part(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "  Value error, The checkpoint you are trying to load has model type `x_dense` but "
        "Transformers does not recognize this architecture.\n\nYou can update Transformers "
        "with the command `pip install --upgrade transformers`. [type=value_error, "
        "input_value=ArgsKwargs(()), input_type=ArgsKwargs]\n",
    )
    assert rc.type == "pydantic_core._pydantic_core.ValidationError"
    assert rc.message.startswith("Value error, The checkpoint you are trying to load")
    assert rc.message.endswith("`pip install --upgrade transformers`.")
    assert rc.origin == "environment"


def test_the_record_above_a_second_traceback_is_its_header_not_a_message(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/app/parser.py", line 228, in extract\n'
        "    x = call.get('name')\n"
        "AttributeError: 'NoneType' object has no attribute 'get'\n"
        "Error trying to handle streaming tool call.\n"
        "Traceback (most recent call last):\n"
        '  File "/app/parser.py", line 292, in extract\n'
        "    i = args.index(delta)\n"
        "ValueError: substring not found\n",
    )
    assert rc.message == "'NoneType' object has no attribute 'get'"


# prefixes: a logger's file tag, Docker BuildKit's step time, an indent the first line lost


def test_vllms_prefix_cut_to_its_file_tag_is_peeled(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "[serving_chat.py:1001] openai_harmony.HarmonyError: Unexpected token 12606 while "
        "expecting start token 200006\n",
    )
    assert (rc.type, rc.process) == ("openai_harmony.HarmonyError", "main")


def test_docker_buildkits_step_time_is_peeled() -> None:
    rc = fixture_cause("field10", "vllm_6919_docker_pip_build_requirements_exit1.log")
    assert (rc.type, rc.evidence, rc.origin) == (
        "pip._internal.exceptions.InstallationSubprocessError",
        "traceback",
        "unknown",  # pip's child exited; its own error is not in the exception
    )


def test_frames_indented_deeper_than_the_first_pasted_one_still_own_the_exception() -> None:
    rc = fixture_cause("field10", "spark-vllm-docker_263_libtorch_cuda_missing.log")
    assert (rc.type, rc.evidence, rc.origin) == ("ImportError", "traceback", "environment")


def test_a_type_a_user_put_in_backticks_is_the_type(tmp_path: Path) -> None:
    rc = cause(tmp_path, "`ModuleNotFoundError` : No module named 'vllm._C\n")
    assert (rc.type, rc.message, rc.origin) == (
        "ModuleNotFoundError",
        "No module named 'vllm._C",
        "environment",
    )


# deaths: the shell's report, a bare signal, Ray's first sentence alone


def test_the_shells_report_names_the_process_that_died(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "start.sh: line 18:  1669 Illegal instruction     (core dumped) python -m "
        "ipex_llm.vllm.cpu.entrypoints.openai.api_server --port 8001\n",
    )
    assert (rc.evidence, rc.process, rc.origin) == ("death-line", "python pid=1669", "unknown")
    assert rc.message.startswith("Illegal instruction")


@pytest.mark.parametrize("signal", ["Illegal instruction", "Bus error", "Floating point exception"])
def test_a_bare_signal_notice_is_a_death(tmp_path: Path, signal: str) -> None:
    rc = cause(tmp_path, f"{signal}\nroot@host:/llm# \n")
    assert (rc.evidence, rc.message, rc.origin) == ("death-line", signal, "unknown")


def test_rays_first_sentence_alone_is_the_death_of_an_actor_not_named(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n",
    )
    assert (rc.evidence, rc.type, rc.process, rc.origin) == ("death-line", "", "main", "unknown")


# relays: a client's label, transformers' nested import error, pip's report after an install


def test_an_applications_label_before_the_js_clients_status_is_part_of_the_record(
    tmp_path: Path,
) -> None:
    rc = cause(tmp_path, "Error: OpenAI API error: 400 status code (no body)\n")
    assert (rc.type, rc.message, rc.evidence) == (
        "Error",
        "OpenAI API error: 400 status code (no body)",
        "wrapper-message",
    )


def test_transformers_nested_import_errors_relay_the_innermost() -> None:
    rc = fixture_cause("field10", "gpustack_2208_libgomp_static_tls_eval.log")
    assert rc.message.endswith("cannot allocate memory in static TLS block")
    assert (rc.evidence, rc.origin) == ("wrapper-message", "environment")


def test_pips_report_of_what_an_install_broke_is_the_last_one_in_view() -> None:
    rc = fixture_cause("field10", "open-instruct_172_pip_conflicts_vllm_torch_pydantic.log")
    assert rc.message.startswith("pip's dependency resolver does not currently take into")
    assert "vllm 0.2.1.post1 requires torch==2.0.1, but you have torch 2.3.0" in rc.message
    assert "vllm-flash-attn" not in rc.message  # the first report, before pip ran again
    assert rc.origin == "environment"


def test_a_build_tools_own_error_names_the_tool() -> None:
    rc = fixture_cause("field10", "vllm_8004_rocm_ninja_libamdhip64_missing.log")
    assert (rc.process, rc.evidence, rc.origin, rc.known) == (
        "ninja",
        "exception-line",
        "environment",
        "build-input-missing",
    )


# checks whose words say whose it is


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        (
            "ValueError: Model GemmaForCausalLM does not support LoRA, but LoRA is enabled. "
            "Support for this model may be added in the future.\n",
            "config",
        ),
        (
            "zmq.error.ZMQError: Cannot assign requested address (addr='tcp://10.2.9.1:13345')\n",
            "environment",
        ),
    ],
)
def test_the_checks_words_say_whose_it_is(tmp_path: Path, text: str, origin: str) -> None:
    assert cause(tmp_path, text).origin == origin
