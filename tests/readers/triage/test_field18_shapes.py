"""Readers and blame rules for what the seventeenth held-out corpus
(``fixtures/logs/field18/``) showed: glibc's report of a failed C++ assert, a C++
program's source place before its words, torch's report that a device backend did not
load under the loader's own error, transformers' lazy import nested over lines, a user's
label of two words, a typed error a sentence
runs into after a comma or quotes mid-sentence, an argument error pasted without its
type, a platform plugin's own call with a keyword vLLM dropped, a vLLM version a user
wrote down, vLLM's engine config classes, and new catalogue
entries. Each on a minimal excerpt of the real shape, and on the fixture it was found
in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause


def test_glibcs_failed_assert_is_read_from_its_assertion(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "python: /project/lib/Analysis/Allocation.cpp:47: std::pair<int, int> "
        "mlir::triton::getCvtOrder(mlir::Attribute, mlir::Attribute): Assertion `!(a && b)' "
        "failed.\n",
    )
    assert (rc.type, rc.message, rc.evidence) == (
        "",
        "Assertion `!(a && b)' failed.",
        "exception-line",
    )
    assert (rc.origin, rc.package) == ("dependency", "triton")


def test_a_failed_assert_elsewhere_names_no_one(tmp_path: Path) -> None:
    rc = cause(tmp_path, "python3: /src/x/alloc.cc:12: void f(): Assertion `n > 0' failed.\n")
    assert (rc.message, rc.origin) == ("Assertion `n > 0' failed.", "unknown")


def test_a_cpp_source_place_before_known_words_is_peeled(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "> gcs_rpc_client.h:552: Failed to connect to GCS within 60 seconds. GCS may have "
        "been killed.\n",
    )
    assert rc.message.startswith("Failed to connect to GCS within 60 seconds.")
    assert (rc.evidence, rc.origin) == ("exception-line", "unknown")


def test_torchs_backend_autoload_report_leaves_the_loaders_error_above_it(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "libascend_hal.so: cannot open shared object file: No such file or directory\n"
        "RuntimeError: Failed to load the backend extension: torch_npu. You can disable "
        "extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.\n",
    )
    assert rc.message.startswith("libascend_hal.so: cannot open shared object file")
    assert rc.origin == "environment"


def test_torchs_backend_autoload_report_alone_is_read_as_it_is(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "RuntimeError: Failed to load the backend extension: torch_npu. You can disable "
        "extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.\n",
    )
    assert (rc.type, rc.message[:36]) == ("RuntimeError", "Failed to load the backend extension")


@pytest.mark.parametrize(
    ("text", "typ", "start"),
    [
        # a user's label of two words
        (
            "Error log: ValueError: There is no module or parameter named 'embed_tokens' in "
            "Qwen3ForCausalLM\n\nBased on the startup log, the task was generate.\n",
            "ValueError",
            "There is no module or parameter named 'embed_tokens'",
        ),
        # a sentence that runs into the exception line after a comma
        (
            "the vllm version installed was 0.10.1.1, and I kept getting errors when running "
            "it, TypeError: EngineArgs.__init__() got an unexpected keyword argument 'x'\n"
            "Is there any solution?\n",
            "TypeError",
            "EngineArgs.__init__() got an unexpected keyword argument 'x'",
        ),
        # a typed error a sentence quotes, with more of the sentence after the quote
        (
            'Both has problem when importing. It shows  "ImportError: cannot import name '
            "'oneshot' from 'llmcompressor'\". Am I the only one?\n",
            "ImportError",
            "cannot import name 'oneshot' from 'llmcompressor'",
        ),
    ],
)
def test_a_typed_error_inside_a_users_words_is_read(
    tmp_path: Path, text: str, typ: str, start: str
) -> None:
    rc = cause(tmp_path, text)
    assert rc.type == typ
    assert rc.message.startswith(start)


def test_an_argument_error_pasted_without_its_type_is_the_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "pip3 show vllm    version is 0.14.1\n\nbut the rerank model has a bug\n"
        " EngineArgs.__init__() got an unexpected keyword argument 'task'\n",
    )
    assert (rc.type, rc.message) == (
        "",
        "EngineArgs.__init__() got an unexpected keyword argument 'task'",
    )
    # the vLLM version the user wrote down is in view: the code driving it passed it
    assert rc.origin == "caller"


def test_transformers_lazy_import_relays_its_innermost_error_over_lines(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "RuntimeError: Failed to import transformers.models.clip.modeling_clip because of "
        "the following error (look up to see its traceback):\n"
        "Failed to import transformers.generation.utils because of the following error "
        "(look up to see its traceback):\n"
        "'FieldInfo' object has no attribute 'required'\n",
    )
    assert (rc.type, rc.message, rc.evidence, rc.origin) == (
        "",
        "'FieldInfo' object has no attribute 'required'",
        "wrapper-message",
        "environment",
    )


def test_an_engine_config_class_lacking_an_attribute_was_asked_by_vllm(tmp_path: Path) -> None:
    rc = cause(tmp_path, "AttributeError: 'SchedulerConfig' object has no attribute 'x'\n")
    assert rc.origin == "vllm"


@pytest.mark.parametrize(
    ("plugin", "origin", "package"),
    [("vllm_spyre", "dependency", "vllm_spyre"), ("vllm_omni", "caller", "vllm_omni")],
)
def test_a_platform_plugins_own_call_with_a_dropped_keyword_is_the_plugins(
    tmp_path: Path, plugin: str, origin: str, package: str
) -> None:
    # vllm-spyre is a platform plugin: its own code is its own (dependency); vllm-omni
    # drives vLLM, a framework (caller)
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        f'  File "/venv/lib/python3.12/site-packages/{plugin}/v1/worker/worker.py", line 9, '
        "in _warmup\n"
        "    NewRequestData(prompt=p)\n"
        "TypeError: NewRequestData.__init__() got an unexpected keyword argument 'prompt'\n",
    )
    assert (rc.origin, rc.package) == (origin, package)


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        ("RuntimeError: FlashInfer requires GPUs with sm75 or higher\n", "environment"),
        (
            "KeyError: 'invalid tool call parser: kimi_k2 (chose from { hermes,pythonic })'\n",
            "config",
        ),
        (
            "ValueError: Tensor parallel size (2) cannot be larger than the number of "
            "available GPUs (1).\n",
            "config",
        ),
        ("AttributeError: 'FieldInfo' object has no attribute 'required'\n", "environment"),
        (
            "ValueError: There is no module or parameter named 'model' in Qwen3ForCausalLM\n",
            "vllm",
        ),
    ],
)
def test_new_catalogue_entries_blame_as_the_message_says(
    tmp_path: Path, text: str, origin: str
) -> None:
    assert cause(tmp_path, text).origin == origin


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("vllm_8579_triton_getcvtorder_assertion_fp32.log", "exception-line", "dependency"),
        ("vllm_1465_gcs_connect_60s_tp2.log", "exception-line", "unknown"),
        ("vllm-ascend_1440_libascend_hal_torch_npu_autoload.log", "exception-line", "environment"),
        ("gpustack_2170_qwen3_embedding_no_param_embed_tokens.log", "exception-line", "vllm"),
        ("rllm_208_engineargs_model_hf_config.log", "exception-line", "caller"),
        ("llm-compressor_1257_cannot_import_oneshot.log", "exception-line", "environment"),
        ("inference_4548_rerank_engineargs_task_kwarg.log", "exception-line", "caller"),
        ("vllm_26292_xgrammar_failed_advance_fsm.log", "exception-line", "unknown"),
        ("vllm_4912_fieldinfo_no_attribute_required.log", "wrapper-message", "environment"),
        ("sendnn-inference_376_schedulerconfig_no_is_multi_step.log", "exception-line", "vllm"),
        ("sendnn-inference_121_newrequestdata_unexpected_prompt.log", "traceback", "dependency"),
        ("vllm-ascend_11990_npugraph_capture_begin_207005.log", "traceback", "unknown"),
        ("dynamo_4934_multinode_tp_larger_than_gpus.log", "traceback", "config"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field18", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
