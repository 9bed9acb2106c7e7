"""Readers and blame rules for what the twenty-first held-out corpus
(``fixtures/logs/field22/``) showed: errors a user's sentence quotes or runs into, vLLM's
process tag without its ``(``, the shell's segmentation fault in a Chinese locale, an
exception's name alone indented under its ``assert``, pytest's place of the error,
relays (the OpenAI client's decoded error object, FastChat's untyped body, a status with
plain text, vLLM's ``Call to .. method failed``), gcc's ``fatal error:`` above a build
command's exit status, vLLM's ``Loading lora .. failed`` re-raise, a framework's copy of
vLLM's code, Outlines' server, and new catalogue entries. Each on a minimal excerpt of
the real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause, no_cause


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        # a quote ends at its closing mark, whatever the sentence says after it
        (
            'when trying to run it using vLLM I get this error "KeyError: '
            "'base_model.model.layers.0.mlp.down_proj.lora_A.weight'\" Can anyone help?\n",
            "KeyError",
            "'base_model.model.layers.0.mlp.down_proj.lora_A.weight'",
        ),
        # a quote of words the catalogue knows, untyped
        (
            '- on `main` this currently fails with "no kernel image is available for '
            'execution on the device".\n',
            "",
            "no kernel image is available for execution on the device",
        ),
        # markdown's bold inside the quote is the paste's
        (
            'But I hit the error "**The checkpoint you are trying to load has model type '
            "`x_dense` but Transformers does not recognize this architecture.** This could "
            'be because .."\n',
            "",
            "The checkpoint you are trying to load has model type `x_dense` but "
            "Transformers does not recognize this architecture.",
        ),
        # a quote in backticks with backticks of its own inside
        (
            "Same issue with **roo code** : `Cannot set `add_generation_prompt` to True "
            "when the last message is from the assistant. Consider using "
            "`continue_final_message` instead.`\n",
            "",
            "Cannot set `add_generation_prompt` to True when the last message is from the "
            "assistant.",
        ),
        # a typed error a sentence runs into, before words the catalogue knows
        (
            "I tried to start it with vllm0.19.1, but I got ValueError: "
            "Gemma4ForConditionalGeneration does not support LoRA yet.\n",
            "ValueError",
            "Gemma4ForConditionalGeneration does not support LoRA yet.",
        ),
        # the sentence names what follows as the error
        (
            "try to run it in docker, but Error out: Bfloat16 is only supported on GPUs "
            "with compute capability of at least 8.0. Your GPU has compute capability 7.5.\n",
            "",
            "Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
        ),
    ],
)
def test_an_error_a_users_sentence_quotes_or_runs_into_is_read(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.type) == ("exception-line", typ)
    assert rc.message.startswith(message)


def test_an_error_bodys_line_is_read_whole_not_as_a_quote(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '{\n    "object": "error",\n'
        '    "message": "At most 1 image(s) may be provided in one request.",\n'
        '    "type": "BadRequestError",\n    "code": 400\n}\n',
    )
    assert (rc.type, rc.message) == (
        "BadRequestError",
        "At most 1 image(s) may be provided in one request.",
    )


def test_a_process_tag_whose_parenthesis_the_paste_lost_is_the_tag(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "EngineCore_0 pid=1248800) ValueError: CUDAGraphMode.FULL is not supported with "
        "CutlassMLAMetadataBuilder backend (support: AttentionCGSupport.NEVER); please try "
        "cudagraph_mode=PIECEWISE\n",
    )
    assert (rc.process, rc.type, rc.origin) == ("EngineCore_0 pid=1248800", "ValueError", "config")


@pytest.mark.parametrize("line", ["段错误", "段错误 (核心已转储)"])
def test_a_segmentation_fault_in_a_chinese_locale_is_a_death_line(
    tmp_path: Path, line: str
) -> None:
    rc = cause(tmp_path, f"Started engine process with PID 118001\n{line}\n")
    assert (rc.evidence, rc.message, rc.origin) == ("death-line", line, "unknown")


def test_an_exceptions_name_alone_indented_under_its_assert_is_the_exception(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        'File "/env/lib/python3.12/site-packages/vllm/lora/punica_wrapper/punica_gpu.py", '
        "line 77, in add_shrink\n"
        "    lora_shrink(\n"
        'File "/env/lib/python3.12/site-packages/vllm/lora/ops/triton_ops/lora_shrink_op.py", '
        "line 149, in _lora_shrink\n"
        "    assert token_lora_mapping.size(0) == M\n"
        "    AssertionError\n",
    )
    assert (rc.evidence, rc.type, rc.message, rc.origin) == (
        "traceback",
        "AssertionError",
        "",
        "vllm",
    )


def test_pytests_place_of_the_error_is_the_frame_that_raised(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        ">       lora_config = LoRAConfig(max_lora_rank=self._max_lora_rank)\n"
        "E       pydantic_core._pydantic_core.ValidationError: 1 validation error for "
        "LoRAConfig\n"
        "E       max_lora_rank\n"
        "E         Input should be 1, 8, 16, 32 [type=literal_error, input_value=48, "
        "input_type=int]\n"
        "\n"
        "vllm_omni/diffusion/lora/manager.py:302: ValidationError\n",
    )
    assert (rc.evidence, rc.origin, rc.package) == ("traceback", "caller", "vllm_omni")


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        (
            "ChatCompletion(id=None, choices=None, object='error', usage=None, code=400, "
            "message=\"expected token 'end of print statement', got 'name'\", param=None, "
            "type='BadRequestError')\n",
            "BadRequestError",
            "expected token 'end of print statement', got 'name'",
        ),
        (
            "Retrying langchain.embeddings.openai.embed_with_retry.<locals>._embed_with_retry "
            "in 4.0 seconds as it raised APIError: Invalid response object from API: "
            '\'{"object":"error","message":"Not Found","code":50001}\' (HTTP response code '
            "was 400).\n",
            "",
            "Not Found",
        ),
        (
            "litellm.BadRequestError: Error code: 400 - You passed 8193 input tokens and "
            "requested 0 output tokens.\n",
            "",
            "You passed 8193 input tokens and requested 0 output tokens.",
        ),
        (
            'err="returned unexpected status 500; responseBody={\\"error\\":{\\"message\\":'
            '\\"Call to wake_up method failed: CUDA Error: out of memory at <path>:163\\",'
            '\\"type\\":\\"InternalServerError\\",\\"code\\":500}}"\n',
            "",
            "CUDA Error: out of memory at <path>:163",
        ),
    ],
)
def test_a_clients_relay_of_the_servers_error_is_read_at_the_error(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.type, rc.message) == ("wrapper-message", typ, message)


def test_a_build_commands_exit_status_only_reports_the_compilers_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "fatal error: infiniband/mlx5dv.h: No such file or directory\n"
        "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit "
        "status 1\n",
    )
    assert (rc.message, rc.origin) == (
        "infiniband/mlx5dv.h: No such file or directory",
        "environment",
    )


def test_a_build_commands_exit_status_alone_is_still_read(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit "
        "status 1\n",
    )
    assert rc.type == "subprocess.CalledProcessError"


def test_vllms_lora_loading_re_raise_is_a_wrapper(tmp_path: Path) -> None:
    note = no_cause(
        tmp_path,
        "RuntimeError: Loading lora /saves/Qwen2-7B-Instruct/lora/sft/checkpoint-1500/ failed\n",
    )
    assert note.startswith("unknown:")
    # a later release says why after a colon: that is the error
    rc = cause(
        tmp_path,
        "ValueError: Loading lora table failed: No adapter found for /data/checkpoint-57\n",
    )
    assert rc.type == "ValueError"


@pytest.mark.parametrize(
    ("path", "origin", "package"),
    [
        # a copy of vLLM's code inside a framework's checkout is the framework's
        ("/verl/verl/third_party/vllm/vllm_v_0_6_3/megatron_weight_loaders.py", "caller", "verl"),
        # vLLM's own checkout is vLLM's
        ("/work/vllm/vllm/model_executor/model_loader/loader.py", "vllm", "vllm"),
    ],
)
def test_a_frameworks_copy_of_vllms_code_is_the_frameworks(
    tmp_path: Path, path: str, origin: str, package: str
) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        f'  File "{path}", line 247, in load_weights\n'
        "    param = params_dict[name]\n"
        "KeyError: 'lm_head.weight'\n",
    )
    assert (rc.origin, rc.package) == (origin, package)


def test_outlines_server_asking_for_what_vllm_dropped_is_outlines(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.10/site-packages/outlines/serve/vllm.py", line 9, in '
        "<module>\n"
        "    from vllm.model_executor.layers.sampler import (\n"
        "ImportError: cannot import name '_apply_min_p' from "
        "'vllm.model_executor.layers.sampler'\n",
    )
    assert (rc.origin, rc.package) == ("caller", "outlines")


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        (
            "data did not match any variant of untagged enum ModelWrapper at line 7 column 3\n",
            "environment",
        ),
        ("AssertionError: vLLM only supports Linux platform (including WSL).\n", "environment"),
        (
            "ValueError: Due to limitations of the custom LoRA CUDA kernel, "
            "max_num_batched_tokens must be <= 65528 when LoRA is enabled.\n",
            "config",
        ),
        (
            "ValueError: Following weights were not initialized from checkpoint: "
            "{'language_model.lm_head.weight'}\n",
            "vllm",
        ),
        (
            "mistral_common.exceptions.InvalidFunctionCallException: Tool call id ... must "
            "be a-z, A-Z, 0-9, with a length of 9.\n",
            "config",
        ),
        (
            "ValueError: Error initializing torch.distributed using env:// rendezvous: "
            "environment variable RANK expected, but not set\n",
            "config",
        ),
        (
            "ValueError: invalid literal for int() with base 10: 'tcp://10.100.120.175:80'\n",
            "config",
        ),
        ("ValueError: Unknown engine argument: task\n", "config"),
        (
            "ValueError: CUDAGraphMode.FULL is not supported with FlashMLA backend\n",
            "config",
        ),
        ("Expert fused Parallelism is not supported for Marlin MoE method\n", "config"),
        ("ImportError: cannot import name 'process_weights_after_loading'\n", "environment"),
        (
            "openai_harmony.HarmonyError: error downloading or loading vocab file: failed "
            "to download or load vocab file\n",
            "environment",
        ),
        ("ValueError: Gemma4ForConditionalGeneration does not support LoRA yet.\n", "config"),
    ],
)
def test_new_catalogue_entries_blame_as_the_message_says(
    tmp_path: Path, text: str, origin: str
) -> None:
    assert cause(tmp_path, text).origin == origin


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("unsloth_960_keyerror_lora_a_weight_vllm_load.log", "exception-line", "vllm"),
        ("sglang_508_mac_vllm_only_supports_linux.log", "exception-line", "environment"),
        ("vllm_19328_jetson_orin_sm87_no_kernel_image.log", "exception-line", "environment"),
        ("mistral-vibe_114_add_generation_prompt_last_assistant.log", "exception-line", "config"),
        ("vllm_23200_cutlass_mla_full_cudagraph_unsupported.log", "exception-line", "config"),
        ("minicpm-v_960_segfault_after_engine_start.log", "death-line", "unknown"),
        ("verl_4418_lora_shrink_assert_qwen3vl.log", "traceback", "vllm"),
        ("vllm-omni_1397_loraconfig_max_rank_48_validation.log", "traceback", "caller"),
        ("worker-vllm_129_chat_template_syntax_error_400.log", "wrapper-message", "unknown"),
        (
            "fastchat_2663_langchain_embeddings_vllm_worker_not_found.log",
            "wrapper-message",
            "unknown",
        ),
        ("agent-zero_1436_bge_m3_embedding_8193_tokens_context.log", "wrapper-message", "config"),
        (
            "llm-d-fast-model-actuation_746_wake_up_cuda_oom_500.log",
            "wrapper-message",
            "environment",
        ),
        ("rl_3412_deep_ep_build_mlx5dv_header_missing.log", "exception-line", "environment"),
        ("verl_706_megatron_loader_keyerror_lm_head.log", "traceback", "caller"),
        ("outlines_503_serve_cannot_import_apply_min_p.log", "traceback", "caller"),
        ("genaiinfra_612_vllm_port_service_name_int.log", "exception-line", "config"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field22", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
