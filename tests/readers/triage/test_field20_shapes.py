"""Readers and blame rules for what the nineteenth held-out corpus
(``fixtures/logs/field20/``) showed: a frame whose ``File "`` the paste cut, a user's
arrow to what came of an error, a builtin's type retyped in lower case, a ``raise``
statement run into its exception line, a label with a space before its colon, a
sentence in Chinese with a space before the type and more after its full stop, a
sentence that says what caused an error in quotes, Modal's runner relaying a repr, the
OpenAI JavaScript client's status in a sentence or with the body's message, an error
body without a type, ``'NoneType' object is not iterable`` alone, click refusing a
command line without a required option, and new catalogue entries. Each on a minimal
excerpt of the real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause


def test_a_frame_whose_file_word_the_paste_cut_is_a_frame(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'vllm/model_executor/models/registry.py", line 416, in inspect_model_cls\n'
        "    for arch in architectures:\n"
        "TypeError: 'NoneType' object is not iterable\n",
    )
    assert (rc.evidence, rc.origin) == ("traceback", "vllm")


def test_a_users_arrow_below_an_exception_is_not_its_message(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        'File ".../vllm/v1/core/sched/scheduler.py", line 1666, in update_from_output\n'
        "    req_index = model_runner_output.req_id_to_index[req_id]\n"
        "KeyError: 'cmpl-1'\n"
        "-> vllm.v1.engine.exceptions.EngineDeadError\n",
    )
    assert (rc.type, rc.message, rc.origin) == ("KeyError", "'cmpl-1'", "vllm")


@pytest.mark.parametrize(
    ("text", "typ", "message"),
    [
        # a builtin's type retyped in lower case
        (
            "valueerror: loading internvl2-8b/ requires you to execute the configuration "
            "file in that repo on your local machine.\n",
            "valueerror",
            "loading internvl2-8b/ requires you",
        ),
        # a raise statement and its exception line on one line
        (
            'raise ValueError("No available memory for the cache blocks. " ValueError: No '
            "available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine.\n",
            "ValueError",
            "No available memory for the cache blocks.",
        ),
        # a label with a space before its colon
        (
            "Using Qwen2.5 model :  ValueError: This model does not support the 'embedding' "
            "task. Supported tasks: {'generate'}\n",
            "ValueError",
            "This model does not support the 'embedding' task.",
        ),
        # a Chinese sentence, a space before the type, more after its full stop
        (
            "使用0.11.0版本的vLLM推理，报错 TypeError: AsyncEngineArgs.__init__() got an "
            "unexpected keyword argument 'disable_log_requests'。发现是因为参数被移除\n",
            "TypeError",
            "AsyncEngineArgs.__init__() got an unexpected keyword argument 'disable_log_requests'",
        ),
        # a sentence that says what caused an error, in quotes
        (
            'and this would cause error " Conversation roles must alternate '
            'user/assistant/user/assistant/..."\n',
            "",
            "Conversation roles must alternate user/assistant/user/assistant/...",
        ),
        # Modal's runner relaying an exception's repr
        (
            "`Runner failed with exception: RuntimeError('Cannot find any model weights "
            "with /llamas/x')`\n",
            "RuntimeError",
            "Cannot find any model weights with /llamas/x",
        ),
        ("'NoneType' object is not iterable\n", "", "'NoneType' object is not iterable"),
    ],
)
def test_an_error_in_a_shape_a_user_gave_it_is_read(
    tmp_path: Path, text: str, typ: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert rc.type == typ
    assert rc.message.startswith(message), rc.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "I use the vllm service, but I encountered a 400 status code (no body) error. "
            "How can I change it?\n",
            "400 status code (no body)",
        ),
        (
            "400 As of transformers v4.44, default chat template is no longer allowed, so you "
            "must provide a chat template if the tokenizer does not define one. None\n",
            "As of transformers v4.44, default chat template is no longer allowed",
        ),
        (
            '{"error": {"message": "Invalid or unsupported audio file."}}\n',
            "Invalid or unsupported audio file.",
        ),
    ],
)
def test_a_clients_record_of_the_servers_answer_relays_it(
    tmp_path: Path, text: str, message: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.evidence) == ("", "wrapper-message")
    assert rc.message.startswith(message)


def test_clicks_refusal_without_a_required_option_is_a_refused_command_line(
    tmp_path: Path,
) -> None:
    rc = cause(tmp_path, "Error: Missing field '--target': Field required\n")
    assert (rc.type, rc.evidence, rc.origin) == ("CLI error", "cli-error", "config")


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        ("NotImplementedError: VLLM_USE_V1=1 is not supported with device type=cpu.\n", "config"),
        (
            "OSError: It looks like the config file at '/root/.cache/huggingface/hub/models--x"
            "/snapshots/1/config.json' is not a valid JSON file.\n",
            "environment",
        ),
        (
            "OSError: It looks like the config file at '/root/.cache/x/model.Q4_0.gguf' is "
            "not a valid JSON file.\n",
            "unknown",
        ),
        ("ValueError: Failed to read config.json for model: /home/models/VoxCPM2\n", "config"),
        ("ValueError: Architecture chatglm not supported\n", "environment"),
        ("openai.BadRequestError: name 'Extension' is not defined\n", "environment"),
        (
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
            "  Value error, Expecting value: line 1 column 1 (char 0) [type=value_error]\n",
            "unknown",
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
        ("vllm_11224_cerebras_gpt_hf_overrides_architecture_none.log", "traceback", "vllm"),
        ("vllm_54301_moriio_read_mode_keyerror.log", "traceback", "vllm"),
        ("vllm_9531_internvl2_trust_remote_code.log", "exception-line", "config"),
        ("qwen3_12_v100_no_cache_blocks_title.log", "exception-line", "config"),
        ("vllm_9761_qwen25_embedding_task_unsupported.log", "exception-line", "config"),
        ("autogen_3597_groupchat_roles_must_alternate.log", "exception-line", "config"),
        ("modal-examples_837_vllm_no_weights_volume_path.log", "wrapper-message", "config"),
        ("vllm_583_llama2_meta_config_no_architectures.log", "exception-line", "unknown"),
        ("chat-ui_1343_vllm_400_no_body.log", "wrapper-message", "unknown"),
        ("flowise_5190_vllm_chatflow_400_no_body.log", "wrapper-message", "unknown"),
        ("seed-x-7b_7_no_chat_template_400.log", "wrapper-message", "config"),
        ("edutelligence_925_whisper_invalid_audio_file_400.log", "wrapper-message", "unknown"),
        ("llm-d-benchmark_1510_guidellm_replay_missing_target.log", "cli-error", "config"),
        ("vllm_19461_cpu_image_v1_notimplemented.log", "exception-line", "config"),
        ("omniparser_130_config_json_zero_bytes.log", "exception-line", "environment"),
        ("minference_146_benchmark_e2e_vllm_llm_no_config.log", "traceback", "caller"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field20", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
