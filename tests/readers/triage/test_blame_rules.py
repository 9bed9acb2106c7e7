"""Whose fault, rule by rule: each family on a minimal excerpt shaped as the real logs
print it (vLLM's checks, Ray's memory monitor, torch's rendezvous, the Hub, a container's
init), and, where frames decide, on real tracebacks of a child Python process laid out as
the case needs (a framework driving vLLM, torch's attribute lookup)."""

from __future__ import annotations

import sys
from pathlib import Path

from vllmdiag.readers.triage import Catalogue, RootCause, triage_file
from vllmdiag.services import proc

SITE = "site-packages"


def _triage(tmp_path: Path, text: str, *, newline: bool = True) -> RootCause:
    """Triage ``text`` as a log (``newline=False``: the file ends without one)."""
    log = tmp_path / "run.log"
    log.write_text(text if newline else text.rstrip("\n"))
    rc = triage_file(log, Catalogue.load(use_env=False)).root_cause
    assert rc is not None, text
    assert rc.why, "every blame says why"
    return rc


def _crash(tmp_path: Path, files: dict[str, str], script: str) -> RootCause:
    """Lay ``files`` out, run ``script`` with the fake site-packages on the path, and
    triage what it printed."""
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    done = proc.run(
        [sys.executable, str(tmp_path / script)],
        env={"PYTHONPATH": str(tmp_path / SITE)},
        capture=True,
        timeout=60,
    )
    assert done.rc == 1 and "Traceback (most recent call last)" in done.stderr
    return _triage(tmp_path, done.stderr)


def test_bfloat16_on_an_older_gpu_is_the_users_dtype(tmp_path: Path) -> None:
    rc = _triage(
        tmp_path,
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
        "8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by "
        "explicitly setting the`dtype` flag in CLI, for example: --dtype=half.\n",
    )
    assert (rc.known, rc.origin) == ("bfloat16-unsupported-gpu", "config")
    assert rc.advice is not None and "--dtype half" in rc.advice


def test_swap_space_checks_are_the_users_setting_not_a_native_crash(tmp_path: Path) -> None:
    rc = _triage(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/vllm/core/scheduler.py", line 1520, in _preempt\n'
        "    raise RuntimeError(\n"
        "RuntimeError: Aborted due to the lack of CPU swap space. Please increase the swap "
        "space to avoid this error.\n",
    )
    assert (rc.known, rc.origin) == ("cpu-swap-space", "config")
    rc = _triage(
        tmp_path,
        "ValueError: Too large swap space. 64.00 GiB out of the 62.00 GiB total CPU memory "
        "is allocated for the swap space.\n",
    )
    assert (rc.known, rc.origin) == ("cpu-swap-space", "config")


_RAYLET = (
    "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: "
    "{n} Workers (tasks / actors) killed due to memory pressure (OOM), {m} Workers crashed "
    "due to other reasons at node (ID: 351e406b196f66bb45eaad02a3b8b4725babfa8cc12949432f7ad7d8"
    ", IP: 10.95.143.76) over the last time period.\n"
)


def test_rays_memory_monitor_kill_is_the_machine(tmp_path: Path) -> None:
    rc = _triage(tmp_path, "Compute log probs:  76%|####    |\n" + _RAYLET.format(n=1, m=0))
    assert (rc.process, rc.known, rc.origin) == ("raylet", "ray-memory-monitor-oom", "environment")


def test_a_raylet_report_of_no_oom_kill_is_not_read_as_one(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(_RAYLET.format(n=0, m=2))
    rc = triage_file(log, Catalogue.load(use_env=False)).root_cause
    assert rc is None or (rc.known, rc.origin) != ("ray-memory-monitor-oom", "environment")
    log.write_text(_RAYLET.format(n=2, m=0))
    assert triage_file(log, Catalogue.load(use_env=False)).root_cause is not None


def test_a_rank_that_never_joined_is_the_network(tmp_path: Path) -> None:
    rc = _triage(
        tmp_path,
        "2024-10-25 12:21:14,974 xinference.api.restful_api 37502 ERROR    [address=172.22."
        "149.188:45585, pid=43525] Timed out after 601 seconds waiting for clients. 1/2 "
        "clients joined.\n"
        "Traceback (most recent call last):\n"
        '  File "/root/miniconda3/lib/python3.11/site-packages/xinference/api/restful_api.py",'
        " line 1002, in launch_model\n"
        "    model_uid = await (await self._get_supervisor_ref()).launch_builtin_model(\n",
    )
    assert (rc.known, rc.origin) == ("distributed-rendezvous-timeout", "environment")


def test_a_refused_hub_token_is_the_environment_a_missing_repo_the_users_id(
    tmp_path: Path,
) -> None:
    head = (
        "huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. (Request ID: "
        "Root=1-69aa2f15-66396d560525c0fb463d8d99)\n\nRepository Not Found for url: "
        "https://huggingface.co/Qwen/Qwen3.5-27B-AWQ/resolve/main/config.json.\n"
        "Please make sure you specified the correct `repo_id` and `repo_type`.\n"
    )
    rc = _triage(tmp_path, head + "Invalid username or password.\n")
    assert (rc.known, rc.origin) == ("hub-token-invalid", "environment")
    rc = _triage(tmp_path, head)
    assert (rc.known, rc.origin) == ("model-not-on-hub", "config")


def test_a_package_not_installed_is_the_environment_a_shadowed_one_is_not(
    tmp_path: Path,
) -> None:
    rc = _triage(
        tmp_path,
        "(TemporaryActor pid=1495807) No module named 'vllm'\n"
        "(TemporaryActor pid=1495807) Traceback (most recent call last):\n"
        '(TemporaryActor pid=1495807)   File "/root/.local/pipx/venvs/gpustack/lib/python3.10/'
        'site-packages/ray/_private/function_manager.py", line 642, in _load_actor_class\n',
    )
    assert (rc.known, rc.origin) == ("python-package-missing", "environment")
    assert "vllm" in rc.why
    files = {
        "vllm.py": "import vllm.engine\n",  # a script named vllm shadows the package
    }
    rc = _crash(tmp_path, files, "vllm.py")
    assert rc.type == "ModuleNotFoundError" and rc.known != "python-package-missing"
    assert rc.origin == "caller"


def test_no_gpu_detected_is_the_machine(tmp_path: Path) -> None:
    rc = _triage(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1146,'
        " in create_engine_config\n"
        "    device_config = DeviceConfig(device=self.device)\n"
        "RuntimeError: Failed to infer device type\n",
    )
    assert (rc.known, rc.origin) == ("gpu-not-detected", "environment")


def test_the_fatal_signal_line_says_unknown_in_either_case(tmp_path: Path) -> None:
    rc = _triage(
        tmp_path,
        "(LLMRayActor pid=101850) ERROR 03-12 10:01:02 [multiproc_executor.py:140] Got fatal "
        "signal from worker processes, shutting down. See stack trace above for root cause "
        "issue.\n",
    )
    assert (rc.known, rc.origin) == ("worker-died", "unknown")


def test_a_request_longer_than_the_served_context_is_a_setting(tmp_path: Path) -> None:
    rc = _triage(
        tmp_path,
        "\"This model's maximum context length is 8192 tokens. However, you requested 8598 "
        "tokens (3478 in the messages, 5120 in the completion). Please reduce the length of "
        "the messages or completion.\", 'type': 'BadRequestError',\n",
    )
    assert (rc.known, rc.origin) == ("request-longer-than-context", "config")


def test_a_container_that_cannot_exec_is_its_launchers(tmp_path: Path) -> None:
    line = "ERROR (catatonit:2): failed to exec pid1: No such file or directory\n"
    rc = _triage(tmp_path, "➜ ramalama --runtime vllm serve ollama://kahnwong/x:3b\n" + line)
    assert (rc.known, rc.origin, rc.package) == (
        "container-command-not-found",
        "caller",
        "ramalama",
    )
    rc = _triage(tmp_path, "$ podman run --rm img vllm serve m\n" + line)
    assert (rc.known, rc.origin, rc.package) == ("container-command-not-found", "caller", None)


def test_frames_a_relaying_prefix_stripped_of_their_indent_still_decide(tmp_path: Path) -> None:
    p = "(ActorModelRayActor pid=700388) "
    rc = _triage(
        tmp_path,
        f"{p}Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::LLMRayActor"
        ".init_process_group() (pid=700386, ip=0.0.0.0, actor_id=fee8a2f8)\n"
        f'{p}File "/venv/lib/python3.12/site-packages/openrlhf/trainer/ray/vllm_engine.py", '
        "line 58, in init_process_group\n"
        f"{p}return self.llm.collective_rpc(\n"
        f'{p}File "/venv/lib/python3.12/site-packages/vllm/entrypoints/llm.py", line 495, in '
        "collective_rpc\n"
        f"{p}executor = self.llm_engine.model_executor\n"
        f"{p}AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n",
    )
    assert (rc.origin, rc.raised_in) == ("vllm", "vllm")


def test_the_frames_above_a_last_line_without_a_newline_are_read(tmp_path: Path) -> None:
    text = (
        "Exception raised in creation task: The actor died because of an error raised in its "
        "creation task, ray::LLMRayActor.__init__() (repr=<openrlhf.trainer.ray.vllm_engine."
        "LLMRayActor object at 0x150cf7b4b910>)\n"
        ' File "openrlhf/trainer/ray/vllm_engine.py", line 58, in __init__\n'
        " self.llm = vllm.LLM(*args, **kwargs)\n"
        ' File "vllm/entrypoints/llm.py", line 210, in __init__\n'
        " engine_args = EngineArgs(\n"
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'"
    )
    rc = _triage(tmp_path, text, newline=False)
    assert (rc.origin, rc.package) == ("caller", "openrlhf")


def test_an_error_pasted_above_its_frames_is_blamed_by_them(tmp_path: Path) -> None:
    rc = _triage(
        tmp_path,
        "'LLMEngine' object has no attribute 'model_executor'\n"
        '  File "/root/exp/dpo/train/online_dpo.py", line 270, in _generate_vllm\n'
        "    llm_model = self.llm.llm_engine.model_executor.driver_worker.model_runner.model\n"
        "\n    ...\n",
    )
    assert (rc.origin, rc.package, rc.raised_in) == ("caller", None, "script")


def test_a_framework_driving_vllm_is_the_caller_not_a_dependency(tmp_path: Path) -> None:
    files = {
        f"{SITE}/litellm/__init__.py": "",
        f"{SITE}/litellm/router.py": "def acompletion():\n"
        "    raise ValueError('no deployment in the model group')\n",
        "proxy.py": "import litellm.router\nlitellm.router.acompletion()\n",
    }
    rc = _crash(tmp_path, files, "proxy.py")
    assert (rc.origin, rc.package, rc.raised_in) == ("caller", "litellm", "litellm")


def test_a_connection_error_a_framework_reports_is_not_the_frameworks(tmp_path: Path) -> None:
    # the same framework reporting that the server did not answer: which end failed is
    # not in view, and the framework is no more at fault than an HTTP client
    files = {
        f"{SITE}/litellm/__init__.py": "",
        f"{SITE}/litellm/router.py": "def acompletion():\n"
        "    raise ConnectionError('Connection error.')\n",
        "proxy.py": "import litellm.router\nlitellm.router.acompletion()\n",
    }
    rc = _crash(tmp_path, files, "proxy.py")
    assert (rc.origin, rc.raised_in) == ("unknown", "litellm")
    assert "connection failed" in rc.why


def test_a_frameworks_checkout_is_the_caller(tmp_path: Path) -> None:
    checkout = tmp_path / "projects" / "sglang" / "python"
    files = {
        f"{SITE}/vllm/__init__.py": "",
        "projects/sglang/python/sglang/__init__.py": "",
        "projects/sglang/python/sglang/srt/__init__.py": "",
        "projects/sglang/python/sglang/srt/model_runner.py": "from vllm import _gone\n",
        "launch.py": f"import sys\nsys.path.insert(0, {str(checkout)!r})\n"
        "import sglang.srt.model_runner\n",
    }
    rc = _crash(tmp_path, files, "launch.py")
    assert rc.type == "ImportError" and rc.raised_in == "script"
    assert (rc.origin, rc.package) == ("caller", "sglang")


_MODULE = (
    "class Module:\n"
    "    def __getattr__(self, name):\n"
    "        raise AttributeError(f\"'{type(self).__name__}' object has no attribute "
    "'{name}'\")\n"
)


def test_torchs_attribute_lookup_blames_the_code_that_asked(tmp_path: Path) -> None:
    files = {
        f"{SITE}/torch/__init__.py": "",
        f"{SITE}/torch/nn/__init__.py": "",
        f"{SITE}/torch/nn/modules/__init__.py": "",
        f"{SITE}/torch/nn/modules/module.py": _MODULE,
        f"{SITE}/vllm/__init__.py": "",
        f"{SITE}/vllm/fp8.py": "from torch.nn.modules.module import Module\n"
        "class ColumnParallelLinear(Module): pass\n"
        "def process(layer=ColumnParallelLinear()):\n    return layer.input_scale\n",
        "serve.py": "import vllm.fp8\nvllm.fp8.process()\n",
    }
    rc = _crash(tmp_path, files, "serve.py")
    assert rc.raised_in == "torch"
    assert (rc.origin, rc.package) == ("vllm", "vllm")


def test_torchs_lookup_alone_in_view_blames_vllm_for_its_own_layer_else_no_one(
    tmp_path: Path,
) -> None:
    """torch's ``Module.__getattr__`` raises for the subclass asked: a vLLM layer that
    lacks an attribute was asked by vLLM's code (the asker's frame is cut); another
    module's class says nothing of who asked."""
    log = (
        "ERROR 05-26 00:17:47 [engine.py:448]     input_scale=layer.input_scale,\n"
        'ERROR 05-26 00:17:47 [engine.py:448]   File "/usr/local/lib/python3.12/dist-packages/'
        'torch/nn/modules/module.py", line 1928, in __getattr__\n'
        "ERROR 05-26 00:17:47 [engine.py:448]     raise AttributeError(\n"
        "ERROR 05-26 00:17:47 [engine.py:448] AttributeError: 'ColumnParallelLinear' object has"
        " no attribute 'input_scale'. Did you mean: 'input_size'?\n"
    )
    rc = _triage(tmp_path, log)
    assert (rc.origin, rc.raised_in) == ("vllm", "torch")
    assert "ColumnParallelLinear" in rc.why
    rc = _triage(tmp_path, log.replace("ColumnParallelLinear", "MyHead"))
    assert (rc.origin, rc.raised_in) == ("unknown", "torch")


def test_another_librarys_lookup_refusing_vllm_is_the_installed_pair(tmp_path: Path) -> None:
    """transformers' tokenizer ``__getattr__`` refuses an attribute its release dropped,
    which vLLM reads (Qwen3-VL#2058's shape): the installed versions do not go
    together."""
    p = "(APIServer pid=75487) "
    rc = _triage(
        tmp_path,
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/env/lib/python3.11/site-packages/vllm/transformers_utils/tokenizer.py",'
        " line 99, in get_cached_tokenizer\n"
        f"{p}    tokenizer.special_map)\n"
        f'{p}  File "/env/lib/python3.11/site-packages/transformers/tokenization_utils_base.py"'
        ", line 1293, in __getattr__\n"
        f'{p}    raise AttributeError(f"{{self.__class__.__name__}} has no attribute {{key}}")\n'
        f"{p}AttributeError: Qwen2Tokenizer has no attribute special_map\n",
    )
    assert (rc.origin, rc.raised_in) == ("environment", "transformers")
    assert "vLLM asked transformers" in rc.why


_BAR = (
    "Processed prompts:   0%|          | 0/4 [00:00<?, ?it/s, est. speed input: 0.00 toks/s]"
    "\rProcessed prompts: {pct}|#####     | {n}/4 [00:00<00:00, 10.58it/s, est. speed input: "
    "58.25 toks/s, output: 169.45 toks/s]\n"
)
_DIED = (
    "ERROR 01-07 20:00:59 [core_client.py:564] Engine core proc EngineCore_DP0 died "
    "unexpectedly, shutting down client.\n"
)


def test_an_engine_that_dies_after_every_prompt_completed_is_vllms_teardown(
    tmp_path: Path,
) -> None:
    done = _BAR.format(pct="100%", n=4) + "Prompt: 'Hello, my name is', Generated text: ' Shin'\n"
    rc = _triage(tmp_path, done + _DIED)
    assert (rc.known, rc.origin) == ("worker-died", "vllm")
    assert "every prompt had completed" in rc.reason
    rc = _triage(tmp_path, _BAR.format(pct=" 50%", n=2) + _DIED)  # died mid-run
    assert (rc.known, rc.origin) == ("worker-died", "unknown")
    again = done + "Processed prompts:   0%|          | 0/8 [00:00<?, ?it/s]\n"
    rc = _triage(tmp_path, again + _DIED)  # a second batch had started
    assert (rc.known, rc.origin) == ("worker-died", "unknown")


def test_a_validation_error_an_actor_framework_relays_names_no_passer(tmp_path: Path) -> None:
    relay = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/xinference/api/restful_api.py", line '
        "1320, in launch_model\n"
        "    model_uid = await (await self._get_supervisor_ref()).launch_builtin_model(\n"
        '  File "/usr/local/lib/python3.12/dist-packages/xoscar/backends/context.py", line 111,'
        " in _process_result_message\n"
        "    raise message.as_instanceof_cause()\n"
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "  Value error, The checkpoint you are trying to load has model type `qwen3_vl` but "
        "Transformers does not recognize this architecture. [type=value_error, input_value="
        "ArgsKwargs((), {'model': '/models/qwen3-vl'}), input_type=ArgsKwargs]\n"
    )
    rc = _triage(tmp_path, relay)
    assert rc.type.endswith("ValidationError") and rc.known == "transformers-unknown-model-type"
    # the catalogue's rule decides (an installed transformers older than the checkpoint:
    # the environment); without one, the relaying REST process is not the passer
    assert rc.origin == "environment"
    rc = _triage(
        tmp_path,
        relay.replace(
            "has model type `qwen3_vl` but Transformers does not recognize this architecture",
            "bad value",
        ),
    )
    assert (rc.origin, rc.package) == ("unknown", None)
