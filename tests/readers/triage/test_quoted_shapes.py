"""Readers for the shapes field3's held-out scoring left unread (an error quoted in prose,
an indented exception line, pip's resolver): each on a minimal
excerpt of the real shape (not the corpus's log), with the neighbouring shape that must
not be read the same way."""

from __future__ import annotations

from pathlib import Path

from tests.support.triage import cause, triage_text


def test_a_typed_error_quoted_in_backticks_in_prose_is_its_exception_line(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "After upgrading, `vllm serve` exits at once with "
        "`RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
        "multiprocessing, you must use the 'spawn' start method` every time.\n",
    )
    assert rc.type == "RuntimeError"
    assert rc.message.startswith("Cannot re-initialize CUDA in forked subprocess.")
    assert rc.message.endswith("'spawn' start method")
    assert rc.evidence == "exception-line"
    assert "quoted" in rc.reason


def test_an_untyped_argument_error_quoted_in_backticks_is_read_without_a_type(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "With the new release our launcher breaks: `LLM.__init__() got an unexpected "
        "keyword argument 'swap_space'` since the option was dropped.\n",
    )
    assert (rc.type, rc.evidence) == ("", "exception-line")
    assert rc.message == "LLM.__init__() got an unexpected keyword argument 'swap_space'"


def test_backticked_code_that_is_no_error_is_not_a_root_cause(tmp_path: Path) -> None:
    t = triage_text(
        tmp_path,
        "Run `vllm serve Qwen/Qwen3-8B --max-model-len 8192` and then "
        "`curl localhost:8000/v1/models`; the ValueError page explains more.\n",
    )
    assert t.root_cause is None


def test_an_indented_exception_line_with_no_frame_near_is_read(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "I run the server with --quantization gptq and get:\n"
        "\n"
        "    RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
    )
    assert rc.type == "RuntimeError"
    assert rc.message.startswith("CUDA error: no kernel image is available")
    assert rc.evidence == "exception-line"


def test_an_indented_source_line_under_a_frame_is_not_an_exception_line(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/vllm/config.py", line 40, in verify\n'
        "    ValueError: int = 3\n"
        "KeyError: 'rope_scaling'\n",
    )
    assert (rc.type, rc.message) == ("KeyError", "'rope_scaling'")


def test_pips_resolver_refusing_an_install_is_the_root_cause(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Collecting vllm==0.5.4\n"
        "ERROR: Cannot install vllm==0.5.4 and torch==2.5.1 because these package versions "
        "have conflicting dependencies.\n"
        "\n"
        "The conflict is caused by:\n"
        "    The user requested torch==2.5.1\n"
        "    vllm 0.5.4 depends on torch==2.4.0\n"
        "\n"
        "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/"
        "dependency-resolution/#dealing-with-dependency-conflicts\n",
    )
    assert rc.type == "" and rc.evidence == "exception-line"
    assert rc.message.startswith(
        "Cannot install vllm==0.5.4 and torch==2.5.1 because these package versions have "
        "conflicting dependencies. The conflict is caused by: "
    )
    assert "The user requested torch==2.5.1; vllm 0.5.4 depends on torch==2.4.0" in rc.message
    # a pin the user asked for against what vLLM declares: the stack being installed
    assert (rc.origin, rc.package) == ("environment", None)


def test_a_failure_that_quotes_the_exceptions_repr_is_read_as_that_exception(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "INFO 09-02 10:01:12 __init__.py:183] Automatically detected platform cuda.\n"
        "WARNING 09-02 10:01:13 _custom_ops.py:20] Failed to import from vllm._C with "
        "ImportError('libcudart.so.12: cannot open shared object file: No such file or "
        "directory')\n",
    )
    assert rc.type == "ImportError"
    assert rc.message == (
        "libcudart.so.12: cannot open shared object file: No such file or directory"
    )
    assert rc.evidence == "wrapper-message"


def test_a_quoted_repr_warning_gives_way_to_the_traceback_that_ended_the_run(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "WARNING 09-02 10:01:13 _custom_ops.py:20] Failed to import from vllm._C with "
        "ImportError('libcudart.so.12: cannot open shared object file')\n"
        + "INFO 09-02 10:01:14 config.py:520] This model supports multiple tasks.\n"
        * 9
        + "Traceback (most recent call last):\n"
        '  File "/x/site-packages/vllm/engine/arg_utils.py", line 900, in create_engine_config\n'
        "    raise ValueError(msg)\n"
        "ValueError: max_model_len 65536 is greater than the derived max_model_len 4096\n",
    )
    assert rc.type == "ValueError" and rc.evidence == "traceback"
