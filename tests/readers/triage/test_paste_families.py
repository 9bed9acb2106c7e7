"""Readers for the shapes real pastes have, each on an excerpt shaped as the real logs
print it: Ray's report of an actor's death, a refused command line without its usage
line, abbreviated process tags, rich's and IPython's tracebacks, the prefixes of the
programs around vLLM, messages with a neighbour glued on, pip's list of what conflicts,
an error quoted apart from its frames."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllmdiag.readers.triage import Catalogue, RootCause, triage_file
from vllmdiag.readers.triage.lines import normalise, without_neighbours
from vllmdiag.readers.triage.origin import classify


def _log(tmp_path: Path, text: str) -> RootCause | None:
    log = tmp_path / "paste.log"
    log.write_text(text)
    return triage_file(log, Catalogue.load(use_env=False)).root_cause


def _cause(tmp_path: Path, text: str) -> RootCause:
    rc = _log(tmp_path, text)
    assert rc is not None, text
    assert rc.why, "every blame says why"
    return rc


_ACTOR = (
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
    "\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict\n"
    "\tactor_id: d9cc467228965f31cb6dbc9301000000\n"
    "\tpid: 20174\n"
    "\tname: Zap04XWorkerDict_0:1\n"
    "\tip: 10.164.37.106\n"
    "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
    "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of "
    "file.\n"
)


def test_rays_report_of_an_actors_death_is_that_actors_death_line(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        "(TaskRunner pid=18948) Traceback (most recent call last):\n"
        '(TaskRunner pid=18948)   File "/x/site-packages/verl/single_controller/ray/base.py",'
        " line 49, in func\n"
        "(TaskRunner pid=18948)     output = ray.get(output)\n"
        + "".join(f"(TaskRunner pid=18948) {line}\n" for line in _ACTOR.splitlines())
        + "root@host:/home/verl# \n",
    )
    assert (rc.type, rc.evidence, rc.process) == ("", "death-line", "WorkerDict pid=20174")
    assert rc.message.startswith("The actor is dead because its worker process has died.")
    assert rc.message.endswith("End of file.")  # the shell's prompt after it is not its text
    assert (rc.known, rc.origin) == ("ray-actor-died", "unknown")
    assert "TaskRunner pid=18948" in rc.reason


def test_an_actor_killed_by_rays_memory_monitor_is_the_machines_memory(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        _ACTOR.replace(
            "Worker unexpectedly exits with a connection error code 2. End of file.",
            "Task was killed due to the node running low on memory.",
        ),
    )
    assert (rc.evidence, rc.origin) == ("death-line", "environment")


def test_an_actor_whose_creation_task_raised_is_read_by_that_tasks_traceback(
    tmp_path: Path,
) -> None:
    rc = _cause(
        tmp_path,
        "ray.exceptions.ActorDiedError: The actor died because of an error raised in its "
        "creation task, ray::LLMRayActor.__init__() (pid=4242, ip=10.0.0.1)\n"
        '  File "/x/site-packages/openrlhf/trainer/ray/vllm_engine.py", line 58, in __init__\n'
        "    self.llm = vllm.LLM(*args, **kwargs)\n"
        '  File "/x/site-packages/vllm/entrypoints/llm.py", line 210, in __init__\n'
        "    engine_args = EngineArgs(\n"
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'\n",
    )
    assert (rc.type, rc.process) == ("TypeError", "LLMRayActor pid=4242")
    assert (rc.origin, rc.package) == ("caller", "openrlhf")


@pytest.mark.parametrize(
    ("line", "who"),
    [
        ("error: unrecognized arguments: --temperature 0.8\n", ("config", None)),
        (
            "error: unrecognized arguments: llama-run -c 2048 --ngl 999 /mnt/models/model.file\n",
            ("caller", "ramalama"),
        ),
        ("error: the following arguments are required: model_tag\n", ("config", None)),
        ("error: argument --dtype: invalid choice: 'fp8'\n", ("config", None)),
    ],
)
def test_an_argparse_refusal_without_its_usage_line_or_program_is_a_cli_error(
    tmp_path: Path, line: str, who: tuple[str, str | None]
) -> None:
    rc = _cause(tmp_path, line)
    assert (rc.type, rc.evidence, rc.process) == ("CLI error", "cli-error", "main")
    assert rc.message == line.removeprefix("error: ").strip()
    assert (rc.origin, rc.package) == who


def test_a_plain_error_line_is_no_cli_error(tmp_path: Path) -> None:
    assert _log(tmp_path, "error: subprocess-exited-with-error\n") is None


def test_an_abbreviated_worker_tag_and_level_before_an_exception_line(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        "  (Worker_TP1) ERROR KeyError: 'layers.0.block_sparse_moe.experts.w13_weight'\n"
        "  (Worker_TP0) ERROR KeyError: 'layers.0.block_sparse_moe.expert",
    )
    assert (rc.type, rc.process, rc.evidence) == ("KeyError", "Worker_TP1", "exception-line")
    assert rc.message == "'layers.0.block_sparse_moe.experts.w13_weight'"
    assert (rc.known, rc.origin) == ("weight-name-not-in-model", "vllm")


def test_richs_boxed_traceback_with_a_wrapped_path_is_read(tmp_path: Path) -> None:
    box = "│ {:<96} │\n"
    rc = _cause(
        tmp_path,
        "╭─────────────────────── Traceback (most recent call last) ───────────────────────╮\n"
        + box.format("/venv/lib/python3.11/site-packages/lightev")
        + box.format("al/models/vllm/vllm_model.py:407 in _loglikelihood_tokens")
        + box.format("")
        + box.format("  406 │   │   │   │   continuation_logprobs = []")
        + box.format("❱ 407 │   │   │   │   for token, logprobs in zip(a, output.prompt_logprobs")
        + box.format("  408 │   │   │   │   │   continuation_logprobs.append(logprobs[token])")
        + "╰──────────────────────────────────────────────────────────────────────────────────╯\n"
        "TypeError: 'NoneType' object is not subscriptable\n",
    )
    assert (rc.type, rc.evidence) == ("TypeError", "traceback")
    assert rc.frames[-1].startswith(
        "/venv/lib/python3.11/site-packages/lighteval/models/vllm/vllm_model.py:407"
    )
    assert (rc.origin, rc.package) == ("caller", "lighteval")


def test_ipythons_traceback_frames_are_read(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        "---------------------------------------------------------------------------\n"
        "ValueError                                Traceback (most recent call last)\n"
        "Cell In[3], line 1\n"
        '----> 1 llm = LLM(model="facebook/opt-125m", max_model_len=4096)\n'
        "\n"
        "File /usr/local/lib/python3.10/dist-packages/vllm/config.py:1220, in "
        "_get_and_verify_max_len(hf_config, max_model_len)\n"
        "   1218     msg = 'too long'\n"
        "-> 1220     raise ValueError(msg)\n"
        "\n"
        "ValueError: User-specified max_model_len (4096) is greater than the derived "
        "max_model_len (max_position_embeddings=2048 or model_max_length=None in model's "
        "config.json).\n",
    )
    assert rc.type == "ValueError" and rc.raised_in == "vllm"
    assert rc.frames[-1].endswith("in _get_and_verify_max_len")
    assert (rc.known, rc.origin) == ("max-model-len-above-positions", "config")


@pytest.mark.parametrize(
    ("raw", "process", "text"),
    [
        (
            "(ServeReplica:llm:LLMServer:qwen pid=2345, ip=10.0.0.1) ValueError: x",
            "ServeReplica:llm:LLMServer:qwen pid=2345",
            "ValueError: x",
        ),
        (
            "(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=123, ip=10.0.0.2) ValueError: x",
            "MapWorker(MapBatches(vLLMEngineStageUDF)) pid=123",
            "ValueError: x",
        ),
        ("(_MapWorker pid=9) ValueError: x", "_MapWorker pid=9", "ValueError: x"),
        ("(autoscaler +2m13s) Tip: use `ray status`", "autoscaler", "Tip: use `ray status`"),
        ("[ERROR|2025-01-20 10:00:00] llamafactory.x:12 >> ValueError: x", "main", "ValueError: x"),
        (
            "2024-05-01:12:00:00,123 ERROR    [evaluator.py:123] ValueError: x",
            "main",
            "ValueError: x",
        ),
        ("E0612 10:00:00.123456       1 server.go:45] error: x", "main", "error: x"),
        (
            "ERROR:vllm.engine.async_llm_engine:Engine background task failed",
            "main",
            "Engine background task failed",
        ),
        (
            "2024-01-01 12:00:00.123 | ERROR    | mymod.main:run:42 - ValueError: x",
            "main",
            "ValueError: x",
        ),
        ("[2025-03-01 12:00:00 DP0 TP3] ValueError: x", "DP0 TP3", "ValueError: x"),
        (
            "[2024-01-01 12:00:00,000] [ERROR] [engine.py:12:run] ValueError: x",
            "main",
            "ValueError: x",
        ),
        (
            "(Worker_PP1_TP0 pid=99) ERROR 01-01 12:00:00 [x.py:1] ValueError: x",
            "Worker_PP1_TP0 pid=99",
            "ValueError: x",
        ),
        ("```", "main", ""),
    ],
)
def test_prefixes_of_releases_and_integrations_are_peeled(
    raw: str, process: str, text: str
) -> None:
    line = normalise(raw, 1)
    assert (line.process, line.text) == (process, text)


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        ("bad value INFO 01-02 12:00:00 [core.py:1] Starting", "bad value"),
        ("bad value (EngineCore_DP0 pid=1) ERROR 01-01 12:00:00 [x.py:1] more", "bad value"),
        ("bad value [repeated 3x across cluster]", "bad value"),
        ("bad value (repeated 2 times)", "bad value"),
        ("bad value 2024-01-01T12:00:00.123Z next", "bad value"),
        ("max_model_len (513) is greater than 512", "max_model_len (513) is greater than 512"),
    ],
)
def test_a_neighbour_glued_to_a_message_is_cut(message: str, kept: str) -> None:
    assert without_neighbours(message) == kept


def test_a_message_that_runs_into_the_next_record_keeps_its_own_words(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
        "8.0. INFO 01-02 12:00:00 [launcher.py:9] Shutting down\n",
    )
    assert rc.message.endswith("of at least 8.0.") and rc.origin == "config"


def test_pip_unable_to_install_one_packages_every_release_is_that_package(
    tmp_path: Path,
) -> None:
    rc = _cause(
        tmp_path,
        "ERROR: Cannot install vllm because these package versions have conflicting "
        "dependencies.\n\nThe conflict is caused by:\n"
        "    outlines 0.0.46 depends on pyairports\n"
        "    outlines 0.0.45 depends on pyairports\n\n"
        "To fix this you could try to:\n"
        "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/\n",
    )
    assert rc.message.startswith("Cannot install vllm because these package versions")
    assert "outlines 0.0.46 depends on pyairports" in rc.message
    assert (rc.origin, rc.package) == ("dependency", "outlines")


def test_an_error_quoted_apart_from_its_frames_is_read_with_them(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        "> `RuntimeError: PassManager::run failed`\n\n"
        "Same kernel compiles on triton 3.6.\n\n```\n"
        'File ".../vllm/v1/worker/gpu/sample/penalties.py", line 207, in apply_penalties\n'
        "    _penalties_kernel[(num_tokens, num_blocks)](...)\n"
        'File ".../triton/runtime/jit.py", line 739, in run\n'
        "    kernel = self._do_compile(key, signature, device)\n"
        'File ".../triton/compiler/compiler.py", line 327, in compile\n'
        "    next_module = compile_ir(module, metadata)\n"
        'File ".../triton/backends/nvidia/co',
    )
    assert (rc.type, rc.message) == ("RuntimeError", "PassManager::run failed")
    assert (rc.raised_in, rc.origin, rc.package) == ("triton", "dependency", "triton")


def test_a_launchers_progress_prompt_above_cut_frames_is_no_error(tmp_path: Path) -> None:
    assert (
        _log(
            tmp_path,
            "svc  | Starting the LLM service; checking the worker log for Error...\n"
            'svc  |   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", '
            "line 71, in init_model\n"
            "svc  |     _check_if_gpu_supports_dtype(self.model_config.dtype)\n",
        )
        is None
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".../triton/runtime/jit.py", ("dependency", "triton")),
        ("…/vllm/v1/worker/gpu_worker.py", ("vllm", "vllm")),
        ("*****/****/lib/python3.11/site-packages/lighteval/x.py", ("dependency", "lighteval")),
    ],
)
def test_a_path_whose_head_the_paste_elided_is_still_placed(
    path: str, expected: tuple[str, str]
) -> None:
    assert classify(path) == expected


def test_a_traceback_flattened_into_one_line_is_read_back_in_its_lines(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        'Traceback (most recent call last):   File "/usr/local/lib/python3.10/dist-packages/'
        'vllm/engine/arg_utils.py", line 800, in create_engine_config     raise ValueError( '
        "^^^^^^^^^^^ ValueError: Total number of attention heads (32) must be divisible by "
        "tensor parallel size (3).",
    )
    assert (rc.type, rc.evidence, rc.raised_in) == ("ValueError", "traceback", "vllm")
    assert rc.message.startswith("Total number of attention heads (32)")
    assert rc.frames[-1].endswith("in create_engine_config")


def test_a_paste_with_doubled_line_breaks_reads_as_the_traceback(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        "Traceback (most recent call last):\n\n"
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/arg_utils.py", line 800, '
        "in create_engine_config\n\n    raise ValueError(\n\n"
        "ValueError: Total number of attention heads (32) must be divisible by tensor "
        "parallel size (3).\n",
    )
    assert (rc.type, rc.evidence, rc.origin) == ("ValueError", "traceback", "config")


def test_a_message_logged_on_its_own_line_before_a_cut_traceback_is_read(
    tmp_path: Path,
) -> None:
    rc = _cause(
        tmp_path,
        "ERROR:root:Failed to start the engine: CUDA out of memory. Tried to allocate 1.00 GiB\n"
        "Traceback (most recent call last):\n"
        '  File "/app/server.py", line 30, in start\n'
        "    engine = AsyncLLMEngine.from_engine_args(args)\n"
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/async_llm_engine.py", '
        "line 500, in from_engine_args\n",
    )
    assert rc.message.startswith("Failed to start the engine: CUDA out of memory.")
    assert (rc.known, rc.origin) == ("cuda-out-of-memory", "environment")


@pytest.mark.parametrize(
    ("text", "process", "known", "origin"),
    [
        (
            "slurmstepd: error: Detected 1 oom_kill event in StepId=123456.batch. Some of the "
            "step tasks have been OOM Killed.\n",
            "slurmstepd",
            "host-oom-killed",
            "environment",
        ),
        (
            "srun: error: node-17: task 0: Killed\n"
            "slurmstepd: error: *** JOB 998 ON node-17 CANCELLED AT 2025-01-01T12:00:00 DUE TO "
            "TIME LIMIT ***\n",
            "slurmstepd",
            "scheduler-ended-the-job",
            "environment",
        ),
        (
            "(raylet) The node with node id: abc123 and address: 10.0.0.3 has been marked dead "
            "because the detector has missed too many heartbeats from it.\n",
            "raylet",
            "ray-node-dead",
            "unknown",
        ),
        (
            "  Warning  Evicted  2m  kubelet  The node was low on resource: memory. Container "
            "vllm was using 60Gi, request is 0.\n",
            "kubelet",
            "host-oom-killed",
            "environment",
        ),
    ],
)
def test_a_cluster_managers_own_death_report_is_the_death_line(
    tmp_path: Path, text: str, process: str, known: str, origin: str
) -> None:
    rc = _cause(tmp_path, text)
    assert (rc.type, rc.evidence, rc.process) == ("", "death-line", process)
    assert (rc.known, rc.origin) == (known, origin)


def test_a_cluster_managers_error_line_is_no_refused_command_line(tmp_path: Path) -> None:
    rc = _log(tmp_path, "srun: error: Unable to create step for job 12: Job/step already done\n")
    assert rc is None or rc.evidence != "cli-error"


def test_an_older_rays_actor_death_without_an_account_is_still_the_actors(
    tmp_path: Path,
) -> None:
    rc = _cause(
        tmp_path,
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: RayWorkerVllm\n\tactor_id: 7f3e\n\tpid: 5150\n",
    )
    assert (rc.type, rc.evidence, rc.process) == ("", "death-line", "RayWorkerVllm pid=5150")
    assert rc.message == "The actor died unexpectedly before finishing this task."
    rc = _cause(
        tmp_path,
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n",
    )
    # the first sentence alone: an actor died that the paste does not name
    assert (rc.type, rc.evidence, rc.process) == ("", "death-line", "main")


def test_a_finalizers_ignored_exception_is_no_root_cause(tmp_path: Path) -> None:
    assert (
        _log(
            tmp_path,
            "Exception ignored in: <function Pool.__del__ at 0x7f00>\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/multiprocessing/pool.py", line 268, in __del__\n'
            "AttributeError: 'NoneType' object has no attribute 'util'\n",
        )
        is None
    )


def test_hydras_announcement_above_a_cut_traceback_is_no_error(tmp_path: Path) -> None:
    assert (
        _log(
            tmp_path,
            "Error executing job with overrides: ['trainer.n_gpus_per_node=8']\n"
            "Traceback (most recent call last):\n"
            '  File "/root/verl/verl/trainer/main_ppo.py", line 40, in main\n'
            "    run_ppo(config)\n",
        )
        is None
    )


def test_a_vllm_plugins_checkout_is_that_plugin_and_its_device_oom_the_machines(
    tmp_path: Path,
) -> None:
    assert classify("/vllm-workspace/vllm-ascend/vllm_ascend/worker/worker_v1.py") == (
        "dependency",
        "vllm_ascend",
    )
    rc = _cause(
        tmp_path,
        "(EngineCore_DP0 pid=200) ERROR 03-01 10:00:05 [core.py:700] Traceback (most recent "
        "call last):\n"
        '(EngineCore_DP0 pid=200) ERROR 03-01 10:00:05 [core.py:700]   File "/vllm-workspace/'
        'vllm-ascend/vllm_ascend/worker/worker_v1.py", line 180, in determine_available_memory\n'
        "(EngineCore_DP0 pid=200) ERROR 03-01 10:00:05 [core.py:700]     torch.npu.synchronize()\n"
        "(EngineCore_DP0 pid=200) ERROR 03-01 10:00:05 [core.py:700] RuntimeError: NPU out of "
        "memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity)\n",
    )
    assert (rc.raised_in, rc.known, rc.origin) == (
        "vllm_ascend",
        "cuda-out-of-memory",
        "environment",
    )


def test_an_exception_groups_sub_exception_is_the_root_cause(tmp_path: Path) -> None:
    rc = _cause(
        tmp_path,
        "ERROR:    Exception in ASGI application\n"
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/usr/local/lib/python3.12/site-packages/anyio/_backends/_asyncio.py", '
        "line 772, in __aexit__\n"
        "  |     raise BaseExceptionGroup(\n"
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | Traceback (most recent call last):\n"
        '    |   File "/usr/local/lib/python3.12/site-packages/vllm/entrypoints/openai/'
        'serving_chat.py", line 300, in create_chat_completion\n'
        "    |     raise ValueError(msg)\n"
        "    | ValueError: This model's maximum context length is 4096 tokens. However, you "
        "requested 5000 tokens (1000 in the messages, 4000 in the completion).\n"
        "    +------------------------------------\n",
    )
    assert (rc.type, rc.evidence, rc.raised_in) == ("ValueError", "traceback", "vllm")
    assert rc.message.startswith("This model's maximum context length is 4096 tokens.")
    assert (rc.known, rc.origin) == ("request-longer-than-context", "config")
