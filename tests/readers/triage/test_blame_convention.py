"""The convention of docs/blame.md, rule by rule, on the messages as vLLM and the
libraries around it print them (vLLM's own checks that name a setting, installed
packages that do not go together, requests too long, no device, the Hub), and on frames
laid out as the case needs (a framework in view, a vLLM check site whose message a paste
cut)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO
from vllmdiag.readers.triage import Catalogue, RootCause, triage_file

ROOT = REPO
SITE = "/usr/local/lib/python3.12/site-packages"


def _cause(tmp_path: Path, text: str) -> RootCause:
    log = tmp_path / "run.log"
    log.write_text(text)
    rc = triage_file(log, Catalogue.load(use_env=False)).root_cause
    assert rc is not None, text
    assert rc.why, "every blame says why"
    return rc


def _tb(*frames: tuple[str, str], exc: str) -> str:
    """A traceback whose frames are ``(path, function)``, outermost first."""
    body = "".join(f'  File "{f}", line 10, in {fn}\n    x()\n' for f, fn in frames)
    return f"Traceback (most recent call last):\n{body}{exc}\n"


#: vLLM's own checks that tell the user to change a setting, as its raise sites word them.
SETTING_CHECKS = [
    "ValueError: Total number of attention heads (28) must be divisible by tensor parallel "
    "size (3).",
    "ValueError: Weight input_size_per_partition = 10944 is not divisible by min_thread_k = "
    "128. Consider reducing tensor_parallel_size or running with --quantization gptq.",
    "AssertionError: 14 is not divisible by 4",
    "ValueError: World size (4) is larger than the number of available GPUs (1) in this node.",
    "ValueError: The quantization method awq is not supported for the current GPU. Minimum "
    "capability: 75. Current capability: 70.",
    "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported "
    "dtypes: [torch.float16]",
    "ValueError: The model type 'gemma2' does not support float16. Reason: Numerical "
    "instability. Please use bfloat16 or float32 instead.",
    "ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (131072). This "
    "effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM "
    "reject longer sequences. Please increase max_num_batched_tokens or decrease "
    "max_model_len.",
    "ValueError: This model does not support `--runner pooling`. You can pass `--convert "
    "<embed|classify> to adapt it into a pooling model.",
    "NotImplementedError: Pipeline parallelism is not supported for this model. Supported "
    "models implement the `SupportsPP` interface.",
    "ValueError: `limit_mm_per_prompt` is only supported for multimodal models.",
    "ValueError: Unknown quantization method: int8. Must be one of ['awq', 'gptq'].",
    "ValueError: Using V1 LLMEngine, but envs.VLLM_USE_V1=False. This should not happen. As "
    "a workaround, try using LLMEngine.from_vllm_config(...) or explicitly set VLLM_USE_V1=0 "
    "or 1 and report this issue on Github.",
    "ValueError: Cannot use chat template functions because tokenizer.chat_template is not "
    "set and no template argument was passed!",
    "ValueError: No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine.",
]


@pytest.mark.parametrize("line", SETTING_CHECKS, ids=[m[:48] for m in SETTING_CHECKS])
def test_vllms_checks_that_name_a_setting_are_the_users_config(tmp_path: Path, line: str) -> None:
    rc = _cause(tmp_path, line + "\n")
    assert (rc.origin, rc.package) == ("config", None), (rc.known, rc.why)


#: Installed packages that do not go together (or are too old for the model).
INSTALLS = [
    "ValueError: The checkpoint you are trying to load has model type `qwen3_vl` but "
    "Transformers does not recognize this architecture.",
    "  Value error, The checkpoint you are trying to load has model type `qwen3_vl` but this "
    "release cannot read it. You can update Transformers with the command `pip install "
    "--upgrade transformers`. [type=value_error, input_value=ArgsKwargs((), {'model': 'q'}), "
    "input_type=ArgsKwargs]",
    "ValueError: Model architectures ['Glm4vForConditionalGeneration'] are not supported for now.",
    "ImportError: cannot import name 'Qwen2_5_VLConfig' from 'transformers'",
    "AttributeError: module 'torch' has no attribute 'float8_e4m3fn'",
    "ModuleNotFoundError: No module named 'transformers.models.mllama'",
    "ModuleNotFoundError: No module named 'vllm._C'",
    "AttributeError: Qwen2Tokenizer has no attribute all_special_tokens_extended",
    "RuntimeError: unable to write to file </torch_18692_1954506624_0>: No space left on "
    "device (28)",
    "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error",
]


@pytest.mark.parametrize("line", INSTALLS, ids=[m[:48] for m in INSTALLS])
def test_installed_packages_that_do_not_go_together_are_the_environment(
    tmp_path: Path, line: str
) -> None:
    rc = _cause(tmp_path, line + "\n")
    assert rc.origin == "environment", (rc.known, rc.why)


def test_a_framework_asking_for_what_is_gone_is_the_caller(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        _tb(
            (f"{SITE}/verl/workers/rollout/vllm_rollout.py", "__init__"),
            exc="ImportError: cannot import name 'LLMEngine' from 'vllm.engine.llm_engine'",
        ),
    )
    assert (rc.known, rc.origin, rc.package) == ("import-name-missing", "caller", "verl")
    rc = _cause(
        tmp_path,
        _tb(
            (f"{SITE}/vllm/model_executor/models/qwen2_5_vl.py", "<module>"),
            exc="ImportError: cannot import name 'Qwen2_5_VLConfig' from 'transformers'",
        ),
    )
    assert (rc.origin, rc.package) == ("environment", None)


def test_a_prompt_too_long_is_the_framework_that_sent_it_else_the_users_lengths(
    tmp_path: Path,
) -> None:
    exc = (
        "ValueError: The decoder prompt (length 16476) is longer than the maximum model length "
        "of 16384. Make sure that `max_model_len` is no smaller than the number of text tokens."
    )
    rc = _cause(
        tmp_path,
        _tb(
            (f"{SITE}/lm_eval/models/vllm_causallms.py", "_model_generate"),
            (f"{SITE}/vllm/entrypoints/llm.py", "generate"),
            (f"{SITE}/vllm/v1/engine/processor.py", "_validate_model_input"),
            exc=exc,
        ),
    )
    assert (rc.known, rc.origin, rc.package) == ("request-longer-than-context", "caller", "lm_eval")
    rc = _cause(tmp_path, exc + "\n")
    assert (rc.origin, rc.package) == ("config", None)


def test_no_device_is_the_machine_unless_a_framework_placed_the_engine(tmp_path: Path) -> None:
    exc = "RuntimeError: No supported device detected."
    rc = _cause(tmp_path, _tb((f"{SITE}/vllm/config.py", "__init__"), exc=exc))
    assert rc.origin == "environment"
    rc = _cause(
        tmp_path,
        _tb(
            ("/workspace/OpenRLHF/openrlhf/trainer/ray/vllm_engine.py", "__init__"),
            (f"{SITE}/vllm/config.py", "__init__"),
            exc=exc,
        ),
    )
    assert rc.origin == "unknown" and "openrlhf placed" in rc.why


def test_the_hub_refusing_a_model_is_its_id_a_refused_token_the_environment(
    tmp_path: Path,
) -> None:
    rc = _cause(
        tmp_path,
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        "https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct/resolve/main/config.json\n",
    )
    assert (rc.known, rc.origin) == ("model-access-refused", "config")
    rc = _cause(
        tmp_path,
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file\n",
    )
    assert (rc.known, rc.origin) == ("model-weights-not-accessible", "environment")


def test_a_check_site_names_the_check_when_the_paste_cut_its_message(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        _tb(
            (f"{SITE}/vllm/config.py", "_get_quantization_config"),
            (f"{SITE}/vllm/model_executor/model_loader/weight_utils.py", "get_quant_config"),
            exc="ValueError: Cann",
        ),
    )
    assert (rc.known, rc.origin) == ("quantization-config-check", "config")
    rc = _cause(
        tmp_path,
        _tb((f"{SITE}/vllm/worker/worker.py", "_check_if_gpu_supports_dtype"), exc="ValueError: B"),
    )
    assert (rc.known, rc.origin) == ("setting-check-site", "config")
    assert "_check_if_gpu_supports_dtype" in rc.why
    rc = _cause(tmp_path, _tb((f"{SITE}/vllm/worker/worker.py", "execute"), exc="ValueError: B"))
    assert rc.origin == "vllm"  # any other raise of vLLM's is its own


def test_an_op_dispatched_through_torch_is_its_owners(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        _tb(
            (f"{SITE}/vllm/_custom_ops.py", "advance_step_flashattn"),
            (f"{SITE}/torch/_ops.py", "__call__"),
            exc="RuntimeError: tensor: name = sampled_token_ids, shape = [27, 1] is not as",
        ),
    )
    assert (rc.raised_in, rc.origin) == ("torch", "vllm")


def test_a_frameless_argument_error_blames_the_caller_only_with_vllms_version_in_view(
    tmp_path: Path,
) -> None:
    exc = "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'\n"
    rc = _cause(tmp_path, exc)
    assert rc.origin == "unknown" and "who passed them" in rc.why
    rc = _cause(
        tmp_path, "INFO 02-13 10:10:48 [api_server.py:1] vLLM API server version 0.7.3\n" + exc
    )
    assert (rc.origin, rc.package) == ("caller", None) and "vLLM 0.7.3" in rc.why
    rc = _cause(
        tmp_path,
        "it fails with `resolve_chat_template_content_format() got an unexpected keyword "
        "argument 'trust_remote_code'` since https://github.com/vllm-project/vllm/pull/17805\n",
    )
    assert rc.origin == "caller"


def test_a_script_in_a_projects_scripts_folder_is_that_projects(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        _tb(
            ("/root/data/GLM-4/basic_demo/glm_server.py", "<module>"),
            exc="TypeError: AsyncEngineArgs.__init__() got an unexpected keyword argument "
            "'worker_use_ray'",
        ),
    )
    assert (rc.origin, rc.package) == ("caller", "GLM-4")
    rc = _cause(
        tmp_path,
        _tb(
            ("/home/alice/scripts/serve.py", "<module>"),
            exc="TypeError: LLM.__init__() got an unexpected keyword argument 'x'",
        ),
    )
    assert (rc.origin, rc.package) == ("caller", None)  # a user's own folder of scripts


@pytest.mark.parametrize(
    ("line", "origin"),
    [
        (
            "AttributeError: '_AsyncLLMEngine' object has no attribute '_process_worker_outputs'",
            "vllm",
        ),
        ("NotImplementedError: Method 'initialize_nixl' is not implemented.", "unknown"),
        (
            "ValueError: Model architectures ['Qwen2_5_VLForConditionalGeneration'] failed to be "
            "inspected. Please check the logs for more details.",
            "unknown",  # the inspection's own error, which says whose it is, is elsewhere
        ),
        (
            "Failed to import python 'vllm' module. Are we running in the correct venv? "
            "AttributeError: class must define a '_type_' attribute",
            "environment",
        ),
    ],
)
def test_what_the_message_says_decides_without_frames(
    tmp_path: Path, line: str, origin: str
) -> None:
    assert _cause(tmp_path, line + "\n").origin == origin


def test_the_convention_is_written_down_and_names_every_kind_and_rule() -> None:
    doc = (ROOT / "docs" / "blame.md").read_text()
    for kind in ("vllm", "dependency", "caller", "config", "environment", "tool", "unknown"):
        assert f"`{kind}`" in doc, kind
    for rule in ("thread_blame", "raised_by", "ActorDiedError", "death-line", "WorkerDict pid"):
        assert rule in doc, rule
    cat = Catalogue.load(use_env=False)
    rules = {re.sub(r":.*", "", e.blame) for e in cat.entries}
    assert rules <= {
        "frames",
        "vllm",
        "config",
        "environment",
        "unknown",
        "request",
        "drift",
        "placement",
        "kernel",
        "driver",
        "loader",
        "dependency",
        "caller",
    }
    for rule in ("request", "drift", "placement", "kernel", "driver", "loader"):
        assert rule in (ROOT / "vllmdiag" / "readers" / "triage" / "catalogue.yaml").read_text()


@pytest.mark.parametrize(
    ("text", "known", "origin"),
    [
        (
            _tb(
                (f"{SITE}/vllm/entrypoints/openai/serving_chat.py", "create_chat_completion"),
                exc="jinja2.exceptions.TemplateError: Conversation roles must alternate "
                "user/assistant/user/assistant/...",
            ),
            "chat-template-refuses-messages",
            "config",
        ),
        (
            "RuntimeError: Failed to load the model config. If the model is a custom model not "
            "yet available in the HuggingFace transformers library, consider setting "
            "`trust_remote_code=True` in LLM or using the `--trust-remote-code` flag in the CLI.",
            "remote-code-not-trusted",
            "config",
        ),
        (
            "ValueError: No supported config format found in deepseek-ai/DeepSeek-R1.",
            "model-files-not-found",
            "config",
        ),
        (
            "safetensors_rust.SafetensorError: Error while deserializing header: "
            "MetadataIncompleteBuffer",
            "weights-file-damaged",
            "environment",
        ),
        (
            "AssertionError: Torch not compiled with CUDA enabled",
            "torch-without-cuda",
            "environment",
        ),
        (
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any "
            "local network address. port: 29500, code: -98, name: EADDRINUSE",
            "port-already-in-use",
            "environment",
        ),
        (
            "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",
            "c-compiler-missing",
            "environment",
        ),
        (
            _tb(
                (f"{SITE}/transformers/models/auto/configuration_auto.py", "__getitem__"),
                exc="KeyError: 'qwen2_vl'",
            ),
            "transformers-config-mapping-missing",
            "environment",
        ),
        (
            "ValueError: Tokenizer class Qwen2Tokenizer does not exist or is not currently "
            "imported.",
            "transformers-class-missing",
            "environment",
        ),
    ],
)
def test_what_the_message_says_names_the_setting_or_the_machine(
    tmp_path: Path, text: str, known: str, origin: str
) -> None:
    rc = _cause(tmp_path, text + "\n")
    assert (rc.known, rc.origin) == (known, origin), rc.why


def test_a_triton_kernel_the_gpu_cannot_hold_is_the_code_that_launched_it(
    tmp_path: Path,
) -> None:
    exc = (
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
        "147456, Hardware limit: 101376. Reducing block sizes or `num_stages` may help."
    )
    rc = _cause(
        tmp_path,
        _tb(
            (f"{SITE}/vllm/model_executor/layers/fused_moe/fused_moe.py", "fused_experts_impl"),
            (f"{SITE}/triton/runtime/jit.py", "run"),
            exc=exc,
        ),
    )
    assert (rc.known, rc.origin, rc.raised_in) == ("triton-out-of-resources", "vllm", "triton")
    rc = _cause(
        tmp_path,
        _tb(
            (f"{SITE}/flash_attn/ops/triton/rotary.py", "apply_rotary"),
            (f"{SITE}/triton/runtime/jit.py", "run"),
            exc=exc,
        ),
    )
    assert (rc.origin, rc.package) == ("dependency", "flash_attn")


@pytest.mark.parametrize(
    ("message", "origin"),
    [
        (
            "ValueError: Sliding window is not supported here. Please set --max-model-len 4096.",
            "config",
        ),
        (
            "ImportError: Please install flash-attn to use this backend: pip install flash-attn",
            "environment",
        ),
        (
            "RuntimeError: shape mismatch in the sampler's gather. For debugging consider "
            "passing CUDA_LAUNCH_BLOCKING=1.",
            "vllm",
        ),
    ],
)
def test_a_message_raised_in_vllm_is_read_by_what_it_says_to_do(
    tmp_path: Path, message: str, origin: str
) -> None:
    rc = _cause(tmp_path, _tb((f"{SITE}/vllm/worker/model_runner.py", "run"), exc=message))
    assert rc.origin == origin, rc.why


def test_vllm_passing_a_library_what_its_release_does_not_take_is_the_installed_pair(
    tmp_path: Path,
) -> None:
    rc = _cause(
        tmp_path,
        _tb(
            (f"{SITE}/vllm/multimodal/processing.py", "call_hf_processor"),
            (f"{SITE}/transformers/image_processing_utils.py", "__call__"),
            exc="TypeError: Qwen2VLImageProcessor.preprocess() got an unexpected keyword "
            "argument 'return_mm_token_type_ids'",
        ),
    )
    assert (rc.origin, rc.package) == ("environment", None)
    rc = _cause(
        tmp_path,
        _tb(
            (f"{SITE}/trl/trainer/grpo_trainer.py", "__init__"),
            (f"{SITE}/vllm/entrypoints/llm.py", "__init__"),
            exc="TypeError: EngineArgs.__init__() got an unexpected keyword argument 'device'",
        ),
    )
    assert (rc.origin, rc.package) == ("caller", "trl")
