"""What vllmdiag assumes about vLLM, checked against the real vLLM 0.18 / 0.26 / 0.29
wheels on the package index (0.25 too for the ``vllm bench`` command reader). Only the
few source files needed are read, by HTTP range requests; no wheel is downloaded whole
and vLLM is never imported (it needs a GPU)."""

from __future__ import annotations

import re
from functools import lru_cache

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from vllmdiag.model.recipe import Builtin, WorkloadConfig
from vllmdiag.plan.workloads import BUILTIN_METRICS, template
from vllmdiag.services.config import load_arm_library
from vllmdiag.services.pkgindex import members, pick_wheel, project, read_member

pytestmark = pytest.mark.network

VERSIONS = ("0.18.0", "0.26.0", "0.29.0")
BENCH = {Builtin.THROUGHPUT: "vllm/benchmarks/throughput.py",
         Builtin.LATENCY: "vllm/benchmarks/latency.py"}  # fmt: skip


@lru_cache(maxsize=32)
def source(version: str, member: str) -> str:
    wheel = pick_wheel(project("vllm").files, Version(version), "3.12")
    assert wheel is not None, f"no vllm {version} wheel on the index"
    by_name = {m.name: m for m in members(wheel.url)}
    assert member in by_name, f"vllm {version} has no {member}"
    return read_member(wheel.url, by_name[member]).decode("utf-8")


def dataset_source(version: str) -> str:
    """The benchmark datasets' argument definitions (one module, or a package later)."""
    wheel = pick_wheel(project("vllm").files, Version(version), "3.12")
    assert wheel is not None
    names = [m.name for m in members(wheel.url)]
    wanted = [n for n in names if re.fullmatch(r"vllm/benchmarks/datasets(?:/\w+)?\.py", n)]
    return "".join(source(version, n) for n in wanted)


@pytest.mark.parametrize("version", VERSIONS)
def test_random_dataset_lengths_win_and_are_spelled_as_the_builtin_does(version: str) -> None:
    """--random-input-len / --random-output-len have defaults that override --input-len /
    --output-len on the random dataset: the built-in must use the random spelling."""
    data = dataset_source(version)
    bench = source(version, BENCH[Builtin.THROUGHPUT])
    for flag in ("--random-input-len", "--random-output-len"):
        assert f'"{flag}"' in data
    assert "random version (--random-input-len) will be preferred" in bench
    argv = template(WorkloadConfig(builtin=Builtin.THROUGHPUT, model="m", input_len=77))
    assert argv[argv.index("--random-input-len") + 1] == "77"
    assert "--input-len" not in argv
    assert 'print(f"Total num prompt tokens:  {total_prompt_tokens}")' in bench
    assert 'print(f"Total num output tokens:  {total_output_tokens}")' in bench


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("builtin", [Builtin.THROUGHPUT, Builtin.LATENCY])
def test_builtin_workload_flags_and_metrics_exist(version: str, builtin: Builtin) -> None:
    src = source(version, BENCH[builtin]) + dataset_source(version)
    argv = template(WorkloadConfig(builtin=builtin, model="m"))
    own = [t for t in argv if t.startswith("--") and t != "--model"]  # --model: engine arg
    assert own
    for flag in own:
        assert f'"{flag}"' in src, f"vllm {version} {BENCH[builtin]} has no {flag}"
    for spec in BUILTIN_METRICS[builtin]:
        if spec.key:
            assert f'"{spec.key.split(".")[0]}"' in src, spec.key
        if spec.regex:
            assert "output tokens/s" in src
    if builtin is Builtin.THROUGHPUT:
        assert '"random"' in src  # --dataset-name random


@pytest.mark.parametrize("version", VERSIONS)
def test_the_smoke_probe_uses_real_entry_points(version: str) -> None:
    assert "class FlexibleArgumentParser" in source(version, "vllm/utils/argparse_utils.py")
    args = source(version, "vllm/engine/arg_utils.py")
    assert "def add_cli_args" in args and "def from_cli_args" in args
    # The probe builds the engine as this version's own throughput benchmark does.
    bench = source(version, BENCH[Builtin.THROUGHPUT])
    if "def from_engine_args" in source(version, "vllm/entrypoints/llm.py"):
        assert "LLM.from_engine_args(engine_args)" in bench
    else:
        assert "LLM(**dataclasses.asdict(engine_args))" in bench


@pytest.mark.parametrize("version", VERSIONS)
def test_flag_arms_name_engine_arguments_of_every_version(version: str) -> None:
    args = source(version, "vllm/engine/arg_utils.py")
    for arm in load_arm_library():
        for flag in arm.flag:
            field = flag.name.lstrip("-").replace("-", "_")
            assert re.search(rf"\b{field}\b", args), f"vllm {version} lacks {flag.name}"


@pytest.mark.parametrize("version", VERSIONS)
def test_env_arms_agree_with_each_versions_envs(version: str) -> None:
    envs = source(version, "vllm/envs.py")
    for arm in load_arm_library():
        for var in (v for v in arm.env if v.startswith("VLLM_")):
            honoured = arm.honoured_by is None or Requirement(arm.honoured_by).specifier.contains(
                version
            )
            known = f'"{var}"' in envs
            assert known == honoured, f"{arm.name}: {var} known={known} on vllm {version}"


def _config_fields(src: str) -> set[str]:
    """The fields of ``class ProfilerConfig`` in vllm/config/profiler.py."""
    body = src.split("class ProfilerConfig", 1)[1].split("\n    def ", 1)[0]
    return set(re.findall(r"^    (\w+): ", body, re.M))


@pytest.mark.parametrize("version", VERSIONS)
def test_profiler_spelling_of_every_version(version: str) -> None:
    """The spelling ``vllmdiag profile`` uses on each version: ``--help=all`` lists the
    flags, ``--profile`` plus a ``--profiler-config`` JSON whose every key is a field of
    that version's ProfilerConfig; no ``VLLM_TORCH_PROFILER_DIR`` any more."""
    import json
    from pathlib import Path

    from vllmdiag.jobs.profile import vllm_flags

    assert 'arg.startswith("--help=")' in source(version, "vllm/utils/argparse_utils.py")
    for path in BENCH.values():
        assert '"--profile"' in source(version, path), f"{version} {path}"
    assert '"--profiler-config"' in source(version, "vllm/engine/arg_utils.py")
    assert '"VLLM_TORCH_PROFILER_DIR"' not in source(version, "vllm/envs.py")
    fields = _config_fields(source(version, "vllm/config/profiler.py"))
    argv, env, _ = vllm_flags.profiler_switch(
        "--profile\n--profiler-config PROFILER_CONFIG\n", Path("/d"), sorted(fields)
    )
    config = json.loads(argv[argv.index("--profiler-config") + 1])
    assert set(config) <= fields and not env
    assert {"delay_iterations", "max_iterations", "ignore_frontend"} <= set(config)
    assert argv[-1] == "--profile"


#: The releases a command workload's ``vllm bench`` line is read against.
BENCH_VERSIONS = ("0.18.0", "0.25.0", "0.26.0", "0.29.0")


def _default(src: str, flag: str) -> str:
    """The ``default=`` of ``add_argument("FLAG", ...)`` in ``src``."""
    found = re.search(rf'"{flag}",[^)]*?default=([^,)\s]+)', src, re.S)
    assert found, f"no default for {flag}"
    return found.group(1)


@pytest.mark.parametrize("version", BENCH_VERSIONS)
def test_throughput_datasets_as_the_command_reader_reads_them(version: str) -> None:
    """What :mod:`vllmdiag.plan.bench_command` assumes of ``vllm bench throughput``: the
    random family's lengths and their defaults, --num-prompts 1000, --dataset-name
    sharegpt, and every dataset but prefix_repetition replaced by random without a
    dataset path (random-mm included)."""
    from vllmdiag.plan import bench_command as bench

    tp = source(version, BENCH[Builtin.THROUGHPUT])
    data = dataset_source(version)
    assert _default(data, "--random-input-len") == str(bench.RANDOM_DEFAULTS["input"])
    assert _default(data, "--random-output-len") == str(bench.RANDOM_DEFAULTS["output"])
    assert _default(tp, "--num-prompts") == str(bench.DEFAULT_PROMPTS)
    assert _default(tp, "--dataset-name") == '"sharegpt"'
    reset = tp.split("def validate_args", 1)[1].split("=== Dataset Name Specific", 1)[0]
    assert "not args.dataset_path" in reset
    assert 'args.dataset_name not in {"prefix_repetition"}' in reset
    assert 'args.dataset_name = "random"' in reset
    assert "When dataset path is not set, it will default to random dataset" in reset
    for name in sorted(bench.RANDOM_FAMILY):
        assert f'"{name}"' in tp, f"vllm {version} throughput has no dataset {name}"
    for flag in ("--random-mm-base-items-per-request", "--random-mm-limit-mm-per-prompt"):
        assert f'"{flag}"' in data
    assert "ignore_eos=True" in tp  # output totals are exactly prompts x output length
    assert 'print(f"Total num output tokens:  {total_output_tokens}")' in tp
    assert '"elapsed_time": elapsed_time' in tp  # the timed region warned about
    # random-mm prompts are chat messages before 0.29; vllm-chat takes them everywhere
    assert 'elif args.backend == "vllm-chat":' in tp
    if Version(version) < Version("0.29"):
        mm = tp.split('elif args.dataset_name == "random-mm":', 1)[1].split("elif ", 1)[0]
        assert 'sample_kwargs["enable_multimodal_chat"] = True' in mm
    cmd = bench.parse(["vllm", "bench", "throughput", "--dataset-name", "random-mm",
                       "--output-len", "512"])  # fmt: skip
    assert cmd is not None and cmd.dataset == "random" and cmd.output_len == 128


@pytest.mark.parametrize("version", BENCH_VERSIONS)
def test_latency_and_serve_flags_as_the_command_reader_reads_them(version: str) -> None:
    from vllmdiag.plan import bench_command as bench

    lat = source(version, BENCH[Builtin.LATENCY])
    for flag, what in (("--input-len", "input"), ("--output-len", "output"),
                       ("--batch-size", "batch")):  # fmt: skip
        assert _default(lat, flag) == str(bench.LATENCY_DEFAULTS[what]), flag
    assert '"--random-input-len"' not in lat and '"--num-prompts"' not in lat
    assert "add_dataset_parser" not in lat  # latency has no dataset at all
    serve = source(version, "vllm/benchmarks/serve.py")
    assert _default(dataset_source(version), "--dataset-name") == '"random"'  # serve's
    # serve's --input-len / --output-len overwrite the datasets' own length flags
    assert "args.random_input_len = args.input_len" in serve
    assert "args.random_output_len = args.output_len" in serve
    for line in ("Successful requests:", "Total input tokens:", "Total generated tokens:",
                 "Benchmark duration (s):"):  # fmt: skip
        assert f'"{line}"' in serve, line
    refuses = 'in ["random", "random-mm", "random-rerank", "prefix_repetition"]' in serve
    assert refuses == (Version(version) >= Version("0.25")), version  # --dataset-path
    cli = source(version, "vllm/entrypoints/cli/main.py")
    assert 'if __name__ == "__main__":' in cli  # python -m vllm.entrypoints.cli.main bench
