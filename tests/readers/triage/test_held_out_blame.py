"""Whose fault, for the families the fourth to sixth held-out corpora (``field5`` to
``field7``) showed: each rule of docs/blame.md on a minimal excerpt shaped as the real
logs print it, and on the real log it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause

SITE = "/usr/local/lib/python3.12/site-packages"


def _tb(*frames: tuple[str, str], exc: str) -> str:
    """A traceback of ``frames`` ((path, function), outermost first) ending in ``exc``."""
    body = "".join(f'  File "{path}", line 10, in {func}\n    x()\n' for path, func in frames)
    return f"Traceback (most recent call last):\n{body}{exc}\n"


# what the message shows but cannot settle: nobody is blamed


@pytest.mark.parametrize(
    "exc",
    [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "RuntimeError: CUDA error: device-side assert triggered",
        "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND",
        "subprocess.CalledProcessError: Command '['python', '-m', 'x']' returned non-zero exit "
        "status 1.",
        "NotImplementedError: No compressed-tensors compatible scheme was found.",
        "RuntimeError: Failed to apply Qwen2VLProcessor on data={'text': 'x'}",
    ],
)
def test_what_the_frame_in_view_cannot_settle_is_unknown(tmp_path: Path, exc: str) -> None:
    rc = cause(tmp_path, _tb((f"{SITE}/torch/cuda/memory.py", "empty_cache"), exc=exc))
    assert rc.origin == "unknown", rc.why


def test_a_stack_cut_in_vllms_engine_layers_shows_no_raiser() -> None:
    assert fixture_cause("field5", "vllm_11010_bnb_prequant_absmax_keyerror_cut.log").origin == (
        "unknown"
    )
    inside = fixture_cause("field5", "vllm_11484_xgrammar_spec_decode_indexerror.log")
    assert inside.origin == "vllm", "a stack cut inside vLLM's model code still shows it"


def test_only_torchs_dispatcher_in_view_is_unknown(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        _tb(
            (f"{SITE}/torch/_ops.py", "__getattr__"),
            (f"{SITE}/torch/_ops.py", "_get_packet"),
            exc="UnicodeDecodeError: 'utf-8' codec can't decode byte 0xec in position 2",
        ),
    )
    assert rc.origin == "unknown"


def test_an_architecture_vllm_lists_as_supported_but_refuses_is_unknown(tmp_path: Path) -> None:
    refused = "ValueError: Model architectures ['LlamaForCausalLM'] are not supported for now."
    listed = " Supported architectures: ['AquilaModel', 'LlamaForCausalLM', 'MistralForCausalLM']"
    assert cause(tmp_path, refused + listed + "\n").origin == "unknown"
    assert cause(tmp_path, refused + " Supported architectures: ['AquilaModel']\n").origin == (
        "environment"
    )


def test_gpus_held_by_a_placement_group_are_not_the_machines_alone(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "ValueError: Current node has no GPU available. current_node_resource={'GPU_group_0_"
        "5999116f8a6e3cc0472c77e709e801000000': 1.0, 'CPU': 92.0}. vLLM engine cannot start\n",
    )
    assert rc.origin == "unknown"
    bare = cause(tmp_path, "ValueError: Current node has no GPU available. {'CPU': 92.0}\n")
    assert bare.origin == "environment"


def test_no_device_after_a_platform_plugin_failed_to_load_is_unknown() -> None:
    rc = fixture_cause("field4", "vllm-ascend_540_failed_infer_device_type.log")
    assert (rc.message, rc.origin) == ("Failed to infer device type", "unknown")
    assert "ascend" in (rc.why or "")


# the installed packages


@pytest.mark.parametrize(
    ("exc", "origin"),
    [
        (
            "ImportError: cannot import name '__version__' from 'vllm' (unknown location)",
            "environment",
        ),
        ("ValueError: Currently, MiniCPMV only supports versions 2.0, 2.5, and 2.6", "environment"),
        ("ImportError: vLLM is not installed. Please check the runtime_env", "environment"),
        (
            "OSError: /lib/libc.so.6: version `GLIBC_2.32' not found (required by x.so)",
            "environment",
        ),
        ("RuntimeError: HIP error: invalid device function", "environment"),
        ("RuntimeError: GPUs with compute capability below 7.0 are not supported.", "environment"),
        (
            "ImportError: vllm>=0.4.3,<=0.6.2 is required for a normal functioning of this "
            "module, but found vllm==0.6.3.",
            "environment",
        ),
        (
            "RuntimeError: create_config:x.ts:148 HCCL function error: hcclCommInitRootInfoConfig",
            "environment",
        ),
        (
            "RuntimeError: UR backend failed. UR backend returns:40 "
            "(UR_RESULT_ERROR_OUT_OF_RESOURCES)",
            "environment",
        ),
    ],
)
def test_what_the_machine_and_its_install_must_change(
    tmp_path: Path, exc: str, origin: str
) -> None:
    assert cause(tmp_path, exc + "\n").origin == origin


def test_who_asked_for_what_the_installed_vllm_lacks(tmp_path: Path) -> None:
    def asked_by(path: str, func: str = "<module>") -> str:
        exc = "ModuleNotFoundError: No module named 'vllm.inputs.data'"
        return cause(tmp_path, _tb((path, func), exc=exc)).origin

    assert asked_by(f"{SITE}/verl/workers/rollout.py") == "caller", "a framework follows the API"
    assert asked_by(f"{SITE}/vllm_omni/patch.py") == "environment", "a lockstep plugin: the pair"
    assert asked_by(f"{SITE}/somelib/x.py") == "environment", "a library: the installed pair"


def test_vllms_own_top_level_import_of_its_missing_module_is_vllms() -> None:
    rc = fixture_cause("field4", "vllm-ascend_707_no_module_benchmarks_serve.log")
    assert rc.origin == "vllm"


def test_a_missing_model_module_is_a_vllm_older_than_the_model(tmp_path: Path) -> None:
    exc = "ModuleNotFoundError: No module named 'vllm.model_executor.models.deepseek_ocr'"
    rc = cause(tmp_path, _tb(("/home/u/notebook.py", "<module>"), exc=exc))
    assert rc.origin == "environment"


def test_a_script_asking_for_its_own_projects_missing_module_is_the_checkout() -> None:
    rc = fixture_cause("field6", "cosyvoice_1471_no_module_cosyvoice_vllm.log")
    assert rc.origin == "environment"


def test_a_library_object_vllm_reads_from_is_the_installed_pair(tmp_path: Path) -> None:
    exc = "AttributeError: 'Qwen2VLProcessor' object has no attribute 'image_token'"
    rc = cause(tmp_path, _tb((f"{SITE}/vllm/model_executor/models/qwen2_vl.py", "f"), exc=exc))
    assert rc.origin == "environment"


def test_vllms_internal_class_lacking_an_attribute_was_asked_by_vllm(tmp_path: Path) -> None:
    exc = "AttributeError: 'TrimmedAttentionMetadata' object has no attribute 'window_block_list'"
    assert cause(tmp_path, exc + "\n").origin == "vllm"


def test_a_library_callable_refusing_what_a_vllm_extension_passes_is_the_pair() -> None:
    rc = fixture_cause("field6", "genaiexamples_1119_vllm_gaudi_fusedsdpa_positional_args.log")
    assert rc.origin == "environment"


# the user's settings


@pytest.mark.parametrize(
    "exc",
    [
        "ValueError: n must be 1 when using greedy sampling, got 16",
        "ValueError: Loading lora table failed: No adapter found for /data/checkpoint-57",
        "ValueError: While loading /x, expected target modules in ['q_proj'] but received "
        "['mlp1.1']. Please verify that the loaded LoRA module is correct",
        "AttributeError: Model LlavaForConditionalGeneration does not support BitsAndBytes "
        "quantization yet.",
        "ValueError: CPU backend only supports V1.",
        "ValueError: The requested device for vllm (cuda:1) is not available. Set the "
        "`--num_processes` argument to a value lower than the number of GPUs.",
        "ValueError: The model's max seq len (29000) is larger than the maximum number of tokens "
        "that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization`",
        "max_num_scheduled_tokens is set to -1792, which does not allow any tokens to be scheduled",
    ],
)
def test_what_the_users_settings_must_change(tmp_path: Path, exc: str) -> None:
    assert cause(tmp_path, exc + "\n").origin == "config"


def test_a_refused_value_only_a_program_writes_names_no_one(tmp_path: Path) -> None:
    line = "error: unrecognized arguments: --common-configs ['model', 'block-size']\n"
    assert cause(tmp_path, line).origin == "unknown"
    assert cause(tmp_path, "error: unrecognized arguments: --common\n").origin == "config"


def test_cuda_reinitialised_in_a_forked_worker_is_the_driver_in_view(tmp_path: Path) -> None:
    exc = "RuntimeError: Cannot re-initialize CUDA in forked subprocess."
    assert cause(tmp_path, exc + "\n").origin == "unknown"
    rc = cause(tmp_path, _tb(("/home/u/my_job.py", "main"), exc=exc))
    assert rc.origin == "caller"


# frameworks: who passed what, and where their code lies


def test_llms_forwarded_keywords_are_passed_by_its_cut_caller(tmp_path: Path) -> None:
    exc = "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'x'"
    rc = cause(tmp_path, _tb((f"{SITE}/vllm/entrypoints/llm.py", "__init__"), exc=exc))
    assert rc.origin == "unknown"


@pytest.mark.parametrize(
    ("corpus", "name", "package"),
    [
        ("field4", "kserve_4501_enable_reasoning_kwarg.log", "kserve"),
        ("field4", "bentovllm_38_served_model_kwarg.log", "bentovllm"),
        ("field5", "dots.ocr_6_basemultimodalitemtracker_attr_cut.log", "dots.ocr"),
        ("field5", "ragflow_11906_completions_create_unused_kwarg.log", "ragflow"),
        (
            "field5",
            "vllm-tgis-adapter_268_no_module_prompt_adapter_vllm010.log",
            "vllm_tgis_adapter",
        ),
        ("field6", "kserve_5399_serving_embedding_create_embedding.log", "kserve"),
        ("field6", "production-stack_617_static_service_discovery_missing_args.log", "vllm_router"),
        ("field6", "dspy_1025_hfclientvllm_extra_inputs_port_url.log", "dsp"),
        ("field6", "vllm-omni_2745_create_model_config_stage_configs.log", "vllm_omni"),
        ("field7", "verl-tool_125_lora_base_layer_keyerror_load_weights.log", "verl"),
        ("field7", "unsloth_2426_no_module_tokenizer_group.log", "unsloth_zoo"),
    ],
)
def test_the_framework_in_view_is_the_caller(corpus: str, name: str, package: str) -> None:
    rc = fixture_cause(corpus, name)
    assert (rc.origin, rc.package) == ("caller", package), rc.why


def test_a_platform_plugins_own_code_is_that_plugins() -> None:
    rc = fixture_cause("field6", "vllm-ascend_569_quant_description_keyerror.log")
    assert (rc.origin, rc.package) == ("dependency", "vllm_ascend")
