"""Readers and blame rules for what the twenty-second held-out corpus
(``fixtures/logs/field23/``) showed: an error record that is an exception's repr, a frame
cut before its opening quote, Triton's ``OutOfResources``, labels and quotes around typed
errors, a record's prefix elided to ``ERROR ...``, a numbered list of tracebacks, client
relays (FastAPI's ``detail``, ``requests``' status line, typographic quotes), uvicorn's
``[Errno 98]``, the executor's report of a worker's death under the wrapper that quotes
its error, a CUDA check with a crash glued on, V0's engine death in a repr, library
checkouts, FlashRAG, a project's ``src/`` folder, and new catalogue entries. Each on a
minimal excerpt of the real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause


@pytest.mark.parametrize(
    ("text", "evidence", "typ", "message"),
    [
        # an error record that is an exception's repr alone
        (
            "(Worker_TP0 pid=60352) ERROR 05-06 06:47:41 [multiproc_executor.py:852] "
            'ValueError("type fp8e4nv not supported in this architecture. The supported '
            "fp8 dtypes are ('fp8e4b15', 'fp8e5')\")\n",
            "exception-line",
            "ValueError",
            "type fp8e4nv not supported in this architecture.",
        ),
        # Triton's exception whose name says no error
        (
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
            "98304, Hardware limit: 65536.\n",
            "exception-line",
            "triton.runtime.errors.OutOfResources",
            "out of resource: shared memory",
        ),
        # a user's arrow label
        (
            "VLLM -> VLLMValidationError: Stream options can only be defined when `stream=True`.\n",
            "exception-line",
            "VLLMValidationError",
            "Stream options can only be defined when `stream=True`.",
        ),
        # a typed error a sentence is about
        (
            "when I tried to inference, this error about AttributeError: 'LLM' object has no "
            "attribute 'llm_engine' keeps popping up.\n",
            "exception-line",
            "AttributeError",
            "'LLM' object has no attribute 'llm_engine'",
        ),
        # backticks around double quotes
        (
            'it get error `"RuntimeError: The expanded size of the tensor (58) must match '
            'the existing size (3) at non-singleton dimension 0."`\n',
            "exception-line",
            "RuntimeError",
            "The expanded size of the tensor (58) must match",
        ),
        # a Chinese label before a type with its module path
        (
            "报错：safetensors_rust.SafetensorError: Error while deserializing header: "
            "HeaderTooLarge\n",
            "exception-line",
            "safetensors_rust.SafetensorError",
            "Error while deserializing header: HeaderTooLarge",
        ),
        # the level and an ellipsis for the rest of the record's prefix
        (
            "ERROR ... torch.distributed.DistBackendError: NCCL error in: /x/NCCLUtils.cpp:93, "
            "unhandled cuda error\n"
            "ncclUnhandledCudaError: Call to CUDA function failed.\n",
            "exception-line",
            "torch.distributed.DistBackendError",
            "NCCL error in: /x/NCCLUtils.cpp:93, unhandled cuda error",
        ),
        # uvicorn's OSError, read whole (not as a relay of ``address already in use``)
        (
            "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', "
            "8000): address already in use\n",
            "exception-line",
            "",
            "[Errno 98] error while attempting to bind on address",
        ),
    ],
)
def test_more_shapes_of_an_errors_own_line(
    tmp_path: Path, text: str, evidence: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.type) == (evidence, typ)
    assert rc.message.startswith(message)


def test_a_frame_cut_before_its_opening_quote_is_a_frame(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        ' "/usr/lib/python3.10/dist-packages/vllm/model_executor/layers/logits_processor.py",'
        " line 106, in _apply_logits_processors\n"
        "    logits_row = logits_processor(token_ids, logits_row)\n"
        "TypeError: 'NoneType' object is not callable\n",
    )
    assert (rc.evidence, rc.origin) == ("traceback", "vllm")


def test_a_numbered_list_of_tracebacks_is_read_at_its_last(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "1.Traceback (most recent call last):\n"
        '  File "/home/u/proj/top_nsigma/src/vllm/sampler.py", line 21, in <module>\n'
        "    from vllm.sequence import (\n"
        "ImportError: cannot import name 'SamplerOutput' from 'vllm.sequence'\n"
        "2.Traceback (most recent call last):\n"
        '  File "/home/u/proj/top_nsigma/src/vllm/sampler.py", line 16, in <module>\n'
        "    from vllm.model_executor.layers.ops.sample import sample\n"
        "ModuleNotFoundError: No module named 'vllm.model_executor.layers.ops'\n",
    )
    assert (rc.type, rc.origin, rc.package) == ("ModuleNotFoundError", "caller", "top_nsigma")


def test_one_traceback_after_a_sentence_ending_in_a_number_is_not_a_list(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/x/run.py", line 3, in <module>\n'
        "    main()\n"
        "ValueError: first\n"
        "2.Traceback (most recent call last):\n"
        '  File "/x/run.py", line 3, in <module>\n'
        "    main()\n"
        "ValueError: second\n",
    )
    # one numbered header is not a list: the earlier error is read, as for any two
    assert rc.message == "first"


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        (
            "But then I get `openai.APIStatusError: Error code: 405 - {'detail': 'Method Not "
            "Allowed'}`\n",
            "",
            "Method Not Allowed",
        ),
        (
            "E           requests.exceptions.HTTPError: API Error: 500 Server Error: Internal "
            "Server Error for url: http://127.0.0.1:8000/v1/chat/completions. Response: "
            "{'error': {'message': 'list index out of range', 'type': 'Internal Server Error',"
            " 'param': None, 'code': 500}}\n",
            "",
            "list index out of range",
        ),
        (
            "目前报这个错误“验证失败，请检查参数是否正确: Error code: 400 - {‘object’: ‘error’, "
            "‘message’: “[{‘type’: ‘extra_forbidden’, ‘msg’: ‘Extra inputs are not permitted’}]”,"
            " ‘type’: ‘BadRequestError’, ‘param’: None, ‘code’: 400}“\n",
            "BadRequestError",
            "[{‘type’: ‘extra_forbidden’, ‘msg’: ‘Extra inputs are not permitted’}]",
        ),
    ],
)
def test_a_clients_status_and_body_relay_the_servers_error(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.type, rc.message) == ("wrapper-message", typ, message)


def test_the_executors_report_of_a_workers_death_yields_to_the_quoted_error(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "(EngineCore_DP0 pid=669) ERROR 11-17 00:53:02 [multiproc_executor.py:230] Worker proc "
        "VllmWorker-0 died unexpectedly, shutting down executor.\n"
        "RuntimeError: Worker failed with error 'This flash attention build does not support "
        "headdim not being a multiple of 32.'\n",
    )
    assert (rc.evidence, rc.message) == (
        "wrapper-message",
        "This flash attention build does not support headdim not being a multiple of 32.",
    )


def test_the_executors_report_alone_is_still_the_death(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "(EngineCore_DP0 pid=669) ERROR 11-17 00:53:02 [multiproc_executor.py:230] Worker proc "
        "VllmWorker-0 died unexpectedly, shutting down executor.\n",
    )
    assert rc.evidence == "death-line"


def test_a_crash_glued_onto_a_cuda_checks_line_is_not_read_over_it(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Failed: Cuda error /home/my/vllm/csrc/custom_all_reduce.cuh:417 'resource already "
        "mapped' Segmentation fault (core dumped)\n",
    )
    assert (rc.evidence, rc.message) == (
        "exception-line",
        "Failed: Cuda error /home/my/vllm/csrc/custom_all_reduce.cuh:417 'resource already mapped'",
    )


def test_v0s_client_logging_the_engines_death_is_its_death_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "ERROR 12-01 13:05:02 client.py:282] RuntimeError('Engine process (pid 76) died.')\n",
    )
    assert (rc.evidence, rc.process, rc.origin) == (
        "death-line",
        "Engine process pid=76",
        "unknown",
    )


@pytest.mark.parametrize(
    ("path", "origin", "package"),
    [
        # a source checkout of a library vLLM uses, installed in place
        ("/app/aiter/aiter/mla.py", "dependency", "aiter"),
        # a project's own folder of the same name twice is still the user's
        ("/home/u/myproj/myproj/run.py", "caller", None),
    ],
)
def test_a_library_checkout_is_that_librarys_code(
    tmp_path: Path, path: str, origin: str, package: str | None
) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        f'  File "{path}", line 89, in get_meta_param\n'
        '    assert nhead in get_mgc, f"{nhead=} not supported"\n'
        "AssertionError: nhead=32 not supported\n",
    )
    assert (rc.origin, rc.package) == (origin, package)


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        ("ValueError: type fp8e4nv not supported in this architecture.\n", "config"),
        ("AssertionError: fp8e4nv data type is not supported on CUDA arch < 89\n", "config"),
        ("ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (524)\n", "config"),
        (
            "VLLMValidationError: Stream options can only be defined when `stream=True`.\n",
            "config",
        ),
        ("additional_kwargs[tool_calls] already exists in this message chunk.\n", "unknown"),
        (
            "ImportError: A module that was compiled using NumPy 1.x cannot be run in NumPy "
            "2.2.6 as it may crash.\n",
            "environment",
        ),
        ("RuntimeError: operator torchvision::nms does not exist\n", "environment"),
        (
            "ValueError: Cannot find model module. 'MiniMindForCausalLM' is not a registered "
            "model in the Transformers library\n",
            "environment",
        ),
        (
            "RuntimeError: SetPrecisionMode:x.ts:155 NPU function error: "
            "at_npu::native::AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, "
            "precision_mode), error code is 500001\n",
            "environment",
        ),
        ("RuntimeError: invalid argument for fmha_v3_varlen_fwd\n", "unknown"),
        (
            "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' "
            "doesn't exist\n",
            "environment",
        ),
        (
            "You can use float16 instead by explicitly setting the`dtype` flag in CLI, for "
            "example: --dtype=half\n",
            "config",
        ),
        # names no one: which index, and who chose it, is not in the message
        ("RuntimeError: CUDA error: invalid device ordinal\n", "unknown"),
    ],
)
def test_new_catalogue_entries_blame_as_the_message_says(
    tmp_path: Path, text: str, origin: str
) -> None:
    assert cause(tmp_path, text).origin == origin


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("1cat-vllm_27_fp8e4nv_kv_cache_v100.log", "exception-line", "config"),
        ("vllm_57712_triton_unified_attention_smem_turing.log", "exception-line", "unknown"),
        ("litellm_29431_stream_options_non_streaming.log", "exception-line", "config"),
        ("aria-ui_15_llm_no_attribute_llm_engine.log", "exception-line", "unknown"),
        ("vllm_16576_multilora_inference_expanded_size.log", "exception-line", "unknown"),
        ("qwen3-vl_559_safetensors_header_too_large.log", "exception-line", "environment"),
        ("vllm-omni_4163_ci_flux2_nccl_unhandled_cuda_error.log", "exception-line", "environment"),
        ("top_nsigma_2_sampler_import_vllm_065.log", "traceback", "caller"),
        ("vllm_7463_chat_completions_405_method_not_allowed.log", "wrapper-message", "unknown"),
        ("vllm_343_tenstorrent_logprobs_list_index_500.log", "wrapper-message", "unknown"),
        ("maxkb_2912_max_completion_tokens_extra_forbidden.log", "wrapper-message", "unknown"),
        ("vllm_8791_pp_uvicorn_bind_8000_in_use.log", "exception-line", "environment"),
        ("ms-swift_6617_flash_attn_headdim_multiple_32.log", "wrapper-message", "unknown"),
        (
            "vllm_2641_custom_allreduce_resource_already_mapped_3090.log",
            "exception-line",
            "unknown",
        ),
        ("distilabel_658_logits_processor_nonetype_not_callable.log", "traceback", "vllm"),
        ("aiter_548_mla_nhead32_not_supported.log", "traceback", "dependency"),
        ("laifs-container-recipes_8_aiter_fmha_v3_invalid_argument.log", "traceback", "unknown"),
        ("flashrag_68_replug_vllmgenerator_model_kwarg.log", "traceback", "caller"),
        ("vllm_1016_invalid_device_ordinal_ray.log", "exception-line", "unknown"),
        ("page-assist_614_tool_calls_already_exists_stream_chunk.log", "exception-line", "unknown"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field23", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)


def test_field20s_engine_death_in_a_repr_is_now_read() -> None:
    rc = fixture_cause("field20", "vllm_10812_engine_process_pid76_died_fp8_h100.log")
    assert (rc.evidence, rc.process) == ("death-line", "Engine process pid=76")
