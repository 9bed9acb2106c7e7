"""Triage on the fourth to twenty-third held-out corpora (``fixtures/logs/field5/`` to
``field24/``): real failure logs from threads no earlier corpus used, each read by hand
under docs/blame.md by one reader and again, blind, by a second, before vllmdiag ran on
them. Each was scored once while it was still held out (the README's figures); the readers
were then built on it. The tests keep each corpus whole and its threads unused elsewhere,
keep the README's statement of the held-out figures exact, and hold triage to what it
reads on them now (a change that loses one fails here)."""

from __future__ import annotations

import json
import re

import pytest

from tests.support import field_score as fs
from tests.support.paths import FIXTURES, REPO

LOGS = FIXTURES / "logs"
README = REPO / "README.md"

#: Per corpus: (root causes right, blame agreeing, logs) when it was scored once, held out.
HELD_OUT = {
    "field5": (57, 57, 72),
    "field6": (87, 78, 107),
    "field7": (48, 50, 65),
    "field8": (13, 15, 15),
    "field9": (62, 59, 82),
    "field10": (55, 61, 73),
    "field11": (38, 37, 48),
    "field12": (60, 62, 83),
    "field13": (52, 65, 84),
    "field14": (35, 39, 47),
    "field15": (56, 56, 71),
    "field16": (51, 52, 72),
    "field17": (13, 15, 19),
    "field18": (52, 47, 65),
    "field19": (69, 68, 90),
    "field20": (62, 59, 84),
    "field21": (7, 6, 8),
    "field22": (67, 64, 94),
    "field23": (70, 67, 88),
    "field24": (35, 27, 45),
    "field25": (57, 61, 80),
    "field26": (56, 51, 75),
}
#: The README's name for each.
ORDINAL = {
    "field5": "fourth",
    "field6": "fifth",
    "field7": "sixth",
    "field8": "seventh",
    "field9": "eighth",
    "field10": "ninth",
    "field11": "tenth",
    "field12": "eleventh",
    "field13": "twelfth",
    "field14": "thirteenth",
    "field15": "fourteenth",
    "field16": "fifteenth",
    "field17": "sixteenth",
    "field18": "seventeenth",
    "field19": "eighteenth",
    "field20": "nineteenth",
    "field21": "twentieth",
    "field22": "twenty-first",
    "field23": "twenty-second",
    "field24": "twenty-third",
    "field25": "twenty-fourth",
    "field26": "twenty-fifth",
}
#: The fewest logs a corpus holds: 60, but for the six collected with what was left of the
#: searches a round may make.
LEAST = {"field8": 15, "field11": 48, "field14": 47, "field17": 19, "field21": 8, "field24": 45}
EARLIER = ("field", "field2", "field3", "field4")
#: Logs a corpus's readers still miss, after they were built on it (root cause, blame):
#: the README names them. A reader that comes to read one fails here until it is struck.
STILL_MISSED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "field9": (
        # a chain whose separator the paste lost: its original error is read, the
        # hand reading took the one raised while handling it
        frozenset({"vllm_6525_bitsandbytes_not_installed.log"}),
        # outlines' refusal names its own class, but only the user's script is in view
        frozenset({"outlines_1233_cfg_not_available_vllm.log"}),
    ),
    "field10": (
        # two handled errors in a server that went on: the first is read, the hand
        # reading took the last
        frozenset({"vllm_10589_hermes_plugin_substring_not_found.log"}),
        frozenset(
            {
                # a project's own checkout named by its folder alone: not read as a project
                "ace-step-1.5_346_samplingparams_cfg_scale.log",
                "opencoder-llm_18_destroy_distributed_environment_import.log",
                # a framework's relaying line that names no framework: the name's import
                # is read as the installed pair
                "cosmos-rl_640_fp8linearop_import.log",
            }
        ),
    ),
    "field11": (
        frozenset(
            {
                # two runs pasted one after the other: the first is read, the hand reading
                # took the last
                "ernie_1000_transformers_modules_dotted_name.log",
                # a stack condensed by hand into ``a -> b -> file.py:2409`` arrows
                "vllm_53603_dcp_dummy_run_nonetype_seq_lens.log",
            }
        ),
        frozenset(
            {
                "ernie_1000_transformers_modules_dotted_name.log",
                "vllm_53603_dcp_dummy_run_nonetype_seq_lens.log",
                # a bare ModuleNotFoundError: which module is not in view
                "opencodeeval_1_vllm_generator_module_missing.log",
                # a container's init that cannot exec its command, no launcher in view
                "ramalama_1948_catatonit_exec_pid1_vllm_runtime.log",
                # a list of supported architectures cut before the model's
                "vllm_9377_llava_arch_not_supported_list_cut.log",
            }
        ),
    ),
    "field13": (
        # pytest's report: the frame's source is in view, its file is not
        frozenset({"modelscope_1240_pytest_try_login_import.log"}),
        # a quantization refused on a GPU that the command in view never asked for
        frozenset({"vllm_34641_mxfp4_not_supported_gfx942.log"}),
    ),
    "field14": (
        # a PR's list of four errors, one after another: the first is read, the hand
        # reading took the last
        frozenset({"vllm-gaudi_652_llama_no_embedding_padding_modules.log"}),
        frozenset(
            {
                "vllm-gaudi_652_llama_no_embedding_padding_modules.log",
                # a framework's trainer class known only by its name, no frame in view
                "r1-v_44_vllm_grpo_trainer_last_loaded_step.log",
            }
        ),
    ),
    "field15": (
        # a process tag that text read back from a screenshot broke over two lines
        frozenset({"vllm-ascend_9056_balance_scheduler_hash_block_size.log"}),
        frozenset(),
    ),
    "field16": (
        frozenset(),
        frozenset(
            {
                # a framework's own error record about its own processing, no frame in
                # view: read by its marks, but whose it is only the thread says
                "gpustack_568_streaming_response_usage_key.log",
                # a command the image lacks: the catalogue blames the launcher that chose
                # image and command; the hand reading, the image (the machine)
                "production-stack_869_cacheserver_executable_not_found.log",
                # a checkout's folder that is not a scripts folder (``RETA-LLM/indexer/``)
                "vllm4mteb_1_worker_has_no_attribute_model.log",
            }
        ),
    ),
    "field18": (
        frozenset(
            {
                # two errors a user listed (``or this one:``): the one with a traceback
                # header is read, the hand reading took the last
                "vllm_11617_eaddrinuse_get_open_port_tcpstore.log",
                # a client's typed error printed before LiteLLM's relay of a FastAPI detail
                "openhands_7805_litellm_notfound_404.log",
                # a proxy's ``Backend returned error: 400`` above a debug record
                "lemonade_1820_backend_returned_400.log",
            }
        ),
        frozenset(
            {
                # a ``File "<string>"`` frame of code that ``eval`` ran, read as a script
                "vllm_8212_fastapi_pydanticundefinedtype_not_subscriptable.log",
                # a launcher's own script refusing a flag, no value shown: read as the user's
                "dynamo_977_serve_dynamo_unrecognized_common_configs.log",
                # the framework is named only in the user's notes (``pip3 install xinference``)
                "inference_4548_rerank_engineargs_task_kwarg.log",
                # a library's method refusing vLLM's keywords: read as vLLM's own call
                "vllm_16339_llguidance_validate_grammar_kwargs.log",
            }
        ),
    ),
    "field19": (
        frozenset(
            {
                # Gloo's record under a Ray worker's tag: the rank tag inside is read
                "gpustack_2125_gloo_connectfullmesh_ray_worker.log",
                # Docker's client relaying the daemon's answer (process ``docker``)
                "server_262_nvidia_container_cli_cuda129.log",
                # a Windows build whose error is indented in pip's output, no frame of it
                "vllm_2309_windows_build_typeerror_nonetype.log",
                # a client's relay of a server's list of errors, and a framework's own
                # wrapper typed before a relayed message
                "milvus_42551_rerank_missing_model_field_400.log",
                "beeai-framework_640_litellm_nonetype_not_iterable_tool_calls.log",
            }
        ),
        frozenset(
            {
                # a compiler's diagnostic whose header name the paste broke over two lines
                "vllm_22_rocm56_hip_bf16_header_missing.log",
                # an instruction a GPU lacks in vLLM's own kernel source: not catalogued
                "vllm_6565_mi50_gfx906_v_dot2c_unsupported.log",
                # ``python collect_env.py`` from a checkout: read as the user's script
                "vllm_12893_mac_collect_env_no_module_vllm.log",
                # an engine-start timeout raised in vLLM's frame: read as vLLM's
                "vllm-ascend_3977_ray_tp_ep_engine_start_timeout.log",
                # uv's resolver: read as the installed stack, the hand reading names the
                # checkout's own pins (vLLM's)
                "vllm_28551_uv_xformers_torch_pin_conflict.log",
                "milvus_42551_rerank_missing_model_field_400.log",
            }
        ),
    ),
    "field20": (
        frozenset(
            {
                # Ray's account of an actor's death under the tag of the process relaying it
                "vllm_38529_vgpu_ray_worker_died_before_nccl_init.log",
                # two runs' records glued onto single lines
                "vllm_20654_ernie45_vl_transformers_modules_dot_path.log",
                # Dify's label and relay quoted inside a user's sentence
                "dify_17773_question_classifier_api_request_failed_400.log",
                # an application's own finding, above the server's log pasted under it
                "joplin_16596_ai_provider_empty_response.log",
                # a body nested, escaped, in a gateway's and cut before it closes
                "vllm_34040_glm_ocr_encoder_cache_size_400.log",
                # a type alone on its line in backticks, its message on the lines below
                "eneo_340_e5_embedding_context_window_exceeded.log",
            }
        ),
        frozenset(
            {
                "vllm_20654_ernie45_vl_transformers_modules_dot_path.log",
                "eneo_340_e5_embedding_context_window_exceeded.log",
                # a bare CancelledError in vLLM's engine loop: read as vLLM's
                "vllm_5901_run_engine_loop_cancellederror.log",
                # ``Killed`` alone: the catalogue reads the OOM killer (the machine)
                "mu-got_17_killed_after_gpu_blocks.log",
                # an OSError whose message the paste broke right after the path began
                "vllm_4_minicpm_modelscope_preprocessor_config.log",
                # vLLM's own benchmark importing a name its vLLM lacks: read as the pair
                "vllm-gfx906_31_bench_latency_cannot_import_llm.log",
                # a checkout folder with a suffix (``..-benchmarks-winston``)
                "llm-continuous-batching-benchmarks_5_prompt_token_count_assert.log",
                # the framework named only in a user's sentence, in Chinese
                "llamafactory_9503_disable_log_requests_vllm011.log",
                # ``transformers_modules`` not found: read as the installed stack
                "vllm_4169_baichuan2_tp4_transformers_modules.log",
                # a message retyped in lower case: the catalogue's words do not match
                "openbuddy_45_v100_bf16_lowercase.log",
                # ``Unknown model type`` raised in vLLM's frame: read as vLLM's
                "minicpm-v_742_minicpmo_audio_unknown_model_type.log",
                # a companion project asking a checkout for a name it lacks: read as the
                # checkout (the machine), the hand reading names the asker
                "async_cosyvoice_22_import_convert_onnx_to_trt.log",
                # transformers' own config class lacking an attribute, no frame in view
                "transformers_36683_gemma3_config_no_vocab_size.log",
            }
        ),
    ),
    "field21": (
        # a type named only in a pull request's prose (``a fatal `AssertionError` crash``)
        frozenset({"vllm_35759_async_scheduler_placeholders_assertionerror.log"}),
        frozenset(),
    ),
    "field22": (
        frozenset(
            {
                # a refused command line quoted inside a user's sentence
                "vllm_2915_unrecognized_lora_modules_vllm_openai_050.log",
                # frames a user wrote out by hand: a place inside a sentence, a frame
                # with no file, ``gpu_worker.py:929 in f -> g()``
                "marc_8_engineargs_lora_target_modules_kwarg.log",
                "lm-format-enforcer_27_asyncllmengine_no_get_tokenizer.log",
                "vime_56_partial_wake_illegal_memory_access.log",
                # two PermissionErrors: the first is read, the run went on past it
                "llm-d_1430_openshift_triton_cache_permission_denied.log",
                # Docker's client relaying the daemon's answer in a user's sentence
                "vllm_15007_docker_exec_vllm_openai_not_in_path.log",
                # words of vLLM's Harmony handling after ``e.g.`` that no entry knows
                "vllm_22879_gptoss_chat_tools_expected_2_output_messages.log",
                # Unsloth's guard over three lines: its last line is read
                "notebooks_336_colab_t4_unsloth_vllm_standby_guard.log",
                # a kernel's refusal printed before the launch failure it caused
                "spark-vllm-docker_143_gb10_fp8_kernel_only_sm120_launch_failure.log",
            }
        ),
        frozenset(
            {
                "marc_8_engineargs_lora_target_modules_kwarg.log",
                "lm-format-enforcer_27_asyncllmengine_no_get_tokenizer.log",
                "llm-d_1430_openshift_triton_cache_permission_denied.log",
                "vllm_15007_docker_exec_vllm_openai_not_in_path.log",
                "notebooks_336_colab_t4_unsloth_vllm_standby_guard.log",
                "spark-vllm-docker_143_gb10_fp8_kernel_only_sm120_launch_failure.log",
                # ``at torch/_inductor/utils.py:3442 f``: no frame the readers know
                "edutelligence_579_glm_ocr_aot_cache_expected_tensors_only.log",
                # a frame ``transformers/tokenization_utils_fast.py`` without its
                # site-packages: read as the user's script
                "qwen3_122_qwen15_gptq_nonetype_pystring.log",
            }
        ),
    ),
    "field23": (
        # two errors in two code blocks, each under the user's words: the first is read,
        # the hand reading took the last
        frozenset({"vllm_3249_benchmark_master_vs_033_enable_prefix_caching.log"}),
        frozenset(
            {
                "vllm_3249_benchmark_master_vs_033_enable_prefix_caching.log",
                # a weight name whose closing quote the user's quote dropped
                "lightcompress_252_quarot_gptq_keyerror_buf_invperm.log",
                # the script's source line above the error, with no ``File`` line
                "language-specific-neurons_3_llmengine_no_driver_worker.log",
                # a SyntaxError at valid Python 3: read as the frame's (vLLM's tests), the
                # hand reading says the interpreter running pytest is not Python 3
                "vllm_1974_pytest_conftest_syntaxerror.log",
            }
        ),
    ),
    "field24": (
        frozenset(
            {
                # two exception lines without frames: the first is read, the hand reading
                # took the ImportError raised on vLLM's error path below it
                "vllm-rocm_13_amdsmi_file_error_current_platform.log",
                # a process tag carried only by the message's next lines
                "vllm-ascend_6636_aclnnquantmatmulweightnz_161002.log",
            }
        ),
        frozenset(
            {
                "vllm-rocm_13_amdsmi_file_error_current_platform.log",
                # Ray giving the driver node no GPU: the catalogue reads the placement (the
                # machine), the hand reading the user's placement group setting
                "vllm_2406_ray_no_gpu_on_driver_node.log",
                # a quantization plugin's own weight loader: read as a framework
                "paroquant_21_rotation_weight_loader_tp_size_mismatch.log",
            }
        ),
    ),
    "field25": (
        frozenset(
            {
                # a type the user mistyped (``ValueErrorr``): read as untyped words
                "lmms-eval_988_qwen25vl_decoder_prompt_163270_valueerrorr.log",
                # botocore's ModelError quoting a body pretty-printed over the lines below
                "amazon-sagemaker-generativeai_110_lmi15_model_name_required.log",
                # a tagged record, an elision, then untagged frames: read as main's
                "prime-rl_1359_prompt_logprobs_assert_update_from_output.log",
                # a frame written as a file name and a function, without ``File``
                "vllm_56841_hidden_states_connector_abort_keyerror.log",
                # one message over two lines: its second line is read
                "vllm_9255_gated_repo_offline_no_token.log",
                # a typed line whose first letter the paste lost, above a cut traceback
                "dots.ocr_166_recursionerror_first_letter_lost.log",
            }
        ),
        frozenset(
            {
                "vllm_56841_hidden_states_connector_abort_keyerror.log",
                # a server's words telling the client what to use instead: no setting named
                "vllm_2617_triton_generate_expects_one_response.log",
                # EasyR1's checkout keeps verl's package name: read as verl
                "easyr1_63_tensor_no_attr_full_tensor.log",
                # a tokenizer class transformers lacks: the catalogue reads the installed
                # stack, the hand reading the trust_remote_code vLLM's wrapper advises
                "vllm_1445_qwentokenizer_class_not_exist.log",
            }
        ),
    ),
    "field26": (
        frozenset(
            {
                # IPython's ``File ~/x.py:9`` frame above an exception line: not read as a
                # frame
                "vllm_3784_neuron_no_module_vllm_c.log",
                # a framework's record whose relayed words end in ``error: <error>``: the
                # error after the label is read, the hand reading took the record whole
                "gpustack_2928_failed_to_create_workload_custom_image.log",
                # Docker compose's ``Error response from daemon`` after its own words
                "1panel_12321_unknown_runtime_name_nvidia.log",
                # a worker's traceback under vLLM's relay prefix, its frames read apart
                "pascal-pkgs-ci_5_p100_inductor_too_old_worker.log",
                # torch's InductorError carrying an AssertionError: the carrier is read
                "vllm_28982_cpu_torch29_inductor_scheduler_assertion.log",
                # a relay's header, label and error on three lines of one record
                "vllm-omni_1638_mimo_audio_async_chunk_is_finished_kwarg.log",
                # CUTLASS's place in its source before its words
                "vllm_5504_cutlass_fp8_kernel_launch_illegal_memory.log",
                # a backtick opening the paste and one closing it on the next line
                "unsloth_2173_colab_grpo_vllm_server_unreachable.log",
                # a server's reason phrase alone (``Internal Server Error``)
                "vllm_3145_gemma_echo_internal_server_error.log",
            }
        ),
        frozenset(
            {
                "vllm-omni_1638_mimo_audio_async_chunk_is_finished_kwarg.log",
                "litellm_28239_encoding_format_list_3_validation_errors.log",
                # the shell's ``Killed``: read as the machine's memory, the hand reading
                # says nothing shows who killed it
                "jetson-containers_795_orin_nx_gguf_killed.log",
                # an installer's own check: read as a user's script, the hand reading names
                # the installer's project
                "vllm-windows-build_14_verify_install_version_mismatch.log",
                # torch refusing the integer tensor vLLM's loader passed: read as torch's
                "vllm-gptq_4_qwen2_parameter_int_dtype_requires_grad.log",
                # a CI's ``at lm_eval/..py:41`` note naming who imported the moved name
                "vllm-ascend_10595_lm_eval_resolve_hf_chat_template_import.log",
                # lm-format-enforcer importing a module vLLM moved: read as a framework's,
                # the hand reading the installed pair
                "vllm_52614_lmfe_0113_stale_mistraltokenizer_import.log",
                # vLLM's own worker importing a name its config lacks: read as vLLM's, the
                # hand reading a mixed install
                "vllm_8855_colab_gemma2_cannot_import_deviceconfig.log",
            }
        ),
    ),
}


@pytest.mark.parametrize("corpus", sorted(HELD_OUT))
def test_the_corpus_is_whole_and_from_threads_no_other_corpus_used(corpus: str) -> None:
    truth = fs.load_truth(LOGS / corpus)
    assert {e["file"] for e in truth} == {p.name for p in (LOGS / corpus).glob("*.log")}
    sources = [e["source"].rstrip("/") for e in truth]
    assert len(set(sources)) == len(sources) >= LEAST.get(corpus, 60), "one log per thread"
    others = {
        e["source"].rstrip("/")
        for name in (*EARLIER, *HELD_OUT)
        if name != corpus
        for e in fs.load_truth(LOGS / name)
    }
    assert not others & set(sources)
    for e in truth:
        assert not fs.entry_faults(e), (e["file"], fs.entry_faults(e))
        if not e.get("unknowable"):
            # as pasted, or as a JSON body escapes it (the body's message is read decoded)
            text = (LOGS / corpus / e["file"]).read_text()
            said = {e["message"], json.dumps(e["message"])[1:-1]}
            assert any(m in text for m in said), e["file"]


@pytest.mark.parametrize("corpus", sorted(HELD_OUT))
def test_triage_reads_every_log_of_a_corpus_it_was_built_on(corpus: str) -> None:
    score = fs.score(LOGS / corpus, fs.library_triage)
    right, agree, total = HELD_OUT[corpus]
    assert score.total == total and score.blamed == total, score.lines()
    assert score.right >= right and score.blame_agree >= agree, score.lines()
    missed, blame_missed = STILL_MISSED.get(corpus, (frozenset(), frozenset()))
    assert {f for f, _ in score.misses} == missed, score.lines()
    assert {f for f, _ in score.blame_misses} == blame_missed, score.lines()


def test_the_readme_states_each_held_out_scoring_as_it_was() -> None:
    text = " ".join(README.read_text().split())
    for corpus, (right, agree, total) in HELD_OUT.items():
        m = re.search(
            rf"{ORDINAL[corpus]} held-out corpus \(`tests/fixtures/logs/{corpus}/`, (\d+) logs\)"
            rf"[^.]*? root cause right for (\d+) of them and blame agreeing for (\d+)",
            text,
        )
        assert m is not None, f"README states the {corpus} figures"
        assert (int(m[1]), int(m[2]), int(m[3])) == (total, right, agree)
