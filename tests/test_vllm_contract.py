"""What vllmdiag assumes about vLLM, checked against the real vLLM 0.18 / 0.26 / 0.29
wheels on the package index. Only the few source files needed are read, by HTTP range
requests; no wheel is downloaded whole and vLLM is never imported (it needs a GPU)."""

from __future__ import annotations

import re
from functools import lru_cache

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from vllmdiag.config import load_arm_library
from vllmdiag.engine.workloads import BUILTIN_METRICS, template
from vllmdiag.model.recipe import Builtin, WorkloadConfig
from vllmdiag.window.index import project
from vllmdiag.window.remote_zip import members, read_member
from vllmdiag.window.wheel_source import pick_wheel

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


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("builtin", [Builtin.THROUGHPUT, Builtin.LATENCY])
def test_builtin_workload_flags_and_metrics_exist(version: str, builtin: Builtin) -> None:
    src = source(version, BENCH[builtin])
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
