"""Reports follow whose fault it is. Run directories are the real H200 run of vLLM 0.26
(the KV-starved matrix) and copies of it whose failing cells' logs are real logs from
public threads: the user's setting drafts no upstream bug and says what to change and
why; a defect in vLLM goes to vLLM's bug form; a framework's misuse goes to the framework.
The environment reads the CUDA build as torch records it."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.support.paths import FIXTURES
from vllmdiag import codec
from vllmdiag.jobs.report import (
    Report,
    ReportRequest,
    SectionId,
    TargetKind,
    Template,
    draft_report,
)
from vllmdiag.jobs.report.release_pins import from_resolve
from vllmdiag.jobs.window.consumers import Resolve
from vllmdiag.model.stack import cuda_build
from vllmdiag.probes import script
from vllmdiag.services import proc
from vllmdiag.spine.runner.readers import RunReaders

KV = FIXTURES / "vllm026" / "kv-starved"
FAILING = ("r1.baseline.llama", "r1.enforce-eager.llama", "r1.attention-backend-env-triton.llama")


def _draft(run: Path) -> Report:
    return draft_report(ReportRequest((run,)))


def _with_log(tmp_path: Path, log: Path) -> Path:
    """The KV-starved run with each failing cell's log replaced by ``log`` (a real one)
    and its root cause read from it as the runner reads a cell's log."""
    run = shutil.copytree(KV, tmp_path / "run")
    for cell in FAILING:
        target = run / "cells" / cell / "log.txt"
        shutil.copy(log, target)
        result = run / "cells" / cell / "result.json"
        data = json.loads(result.read_text())
        data["root_cause"] = codec.dump(RunReaders().root_cause(target))
        result.write_text(json.dumps(data))
    return run


def test_a_kv_cache_the_users_own_setting_starves_drafts_no_upstream_bug() -> None:
    """The run's baseline asked --gpu-memory-utilization 0.003; vLLM said to raise it."""
    report = _draft(KV)
    t = report.target
    assert (t.project, t.kind, t.template) == ("", TargetKind.NOT_A_BUG, Template.GENERIC)
    assert t.reason.startswith("Not an upstream bug: the failure lies in the user's own settings")
    assert report.title.startswith("Not an upstream bug (config): ValueError: No available")
    summary = report.section(SectionId.SUMMARY)
    assert summary is not None
    assert "**Not an upstream bug: no issue to file.**" in summary.body
    assert "What to change: `flag --gpu-memory-utilization 0.5` makes it pass" in summary.body
    assert (
        "The failing setting, `--gpu-memory-utilization 0.003`, came from the recipe's "
        "baseline flags." in summary.body
    )
    assert "*cell* is one run of one workload" in summary.body  # said once, for a maintainer
    assert "### 🐛 Describe the bug" not in report.body  # not vLLM's bug form
    root = report.section(SectionId.ROOT_CAUSE)
    assert root is not None and "Whose fault it is: `config: vLLM's own check" in root.body
    assert "in vLLM's own code" in root.body  # where it was raised, said apart


def test_a_defect_in_vllm_goes_to_vllms_bug_form(tmp_path: Path) -> None:
    """A real DeepGEMM refusal on an unsupported GPU (vllm-project/vllm#46726)."""
    run = _with_log(tmp_path, FIXTURES / "logs/field/vllm_46726_worker_then_engine_cut.log")
    report = _draft(run)
    t = report.target
    assert (t.project, t.kind, t.template) == ("vllm", TargetKind.VLLM, Template.VLLM_BUG)
    assert "DeepGEMM" in t.reason
    assert report.title.startswith("[Bug]: RuntimeError: Assertion error")
    assert "### 🐛 Describe the bug" in report.body
    assert "Not an upstream bug" not in report.body


def test_a_framework_passing_a_removed_keyword_goes_to_the_framework(tmp_path: Path) -> None:
    """OpenRLHF's actor passes worker_use_ray through vllm.LLM (OpenRLHF/OpenRLHF#702)."""
    run = _with_log(tmp_path, FIXTURES / "logs/blame/openrlhf_702_worker_use_ray_actor.log")
    report = _draft(run)
    t = report.target
    assert (t.project, t.kind, t.template) == ("openrlhf", TargetKind.CALLER, Template.GENERIC)
    assert "openrlhf drives vLLM and calls it wrongly" in t.reason
    assert report.title.startswith("openrlhf calls vLLM wrongly: TypeError")
    assert "### 🐛 Describe the bug" not in report.body


def test_a_projects_demo_script_calling_vllm_wrongly_goes_to_that_project(
    tmp_path: Path,
) -> None:
    """GLM-4's demo server script passes worker_use_ray (zai-org/GLM-4#712): the script
    lies in GLM-4's checkout (``GLM-4/basic_demo/``), so the issue goes to GLM-4."""
    run = _with_log(tmp_path, FIXTURES / "logs/blame/glm4_712_worker_use_ray_script.log")
    t = _draft(run).target
    assert (t.project, t.kind) == ("glm-4", TargetKind.CALLER)
    assert "GLM-4 drives vLLM" in t.reason and "glm_server.py" in t.reason


def test_a_users_own_script_calling_vllm_wrongly_is_no_upstream_bug(tmp_path: Path) -> None:
    """The same failure from a script of the user's own (no project's scripts folder)."""
    real = FIXTURES / "logs/blame/glm4_712_worker_use_ray_script.log"
    log = tmp_path / "own.log"
    log.write_text(real.read_text().replace("/root/autodl-tmp/data/GLM-4/basic_demo/", "/root/"))
    run = _with_log(tmp_path, log)
    t = _draft(run).target
    assert (t.project, t.kind) == ("", TargetKind.NOT_A_BUG)
    assert "glm_server.py" in t.reason and "fix the script" in t.reason


def test_the_machine_taken_by_others_is_no_upstream_bug(tmp_path: Path) -> None:
    """Free memory below the asked share at start (vllm-project/vllm#23192)."""
    run = _with_log(tmp_path, FIXTURES / "logs/blame/vllm_23192_free_memory_engine_core.log")
    report = _draft(run)
    assert report.target.kind is TargetKind.NOT_A_BUG
    assert "the machine it ran on" in report.target.reason
    assert report.title.startswith("Not an upstream bug (environment): ValueError: Free memory")


def test_the_cuda_build_is_read_from_torch_not_left_none() -> None:
    assert cuda_build("2.11.0+cu130", None) == "13.0"
    assert cuda_build("2.9.1+cu128", None) == "12.8"
    assert cuda_build("2.11.0", None, {"nvidia-cuda-runtime": "13.0.96"}) == (
        "13.0 (from nvidia-cuda-runtime 13.0.96)"
    )
    assert cuda_build("2.11.0", "12.9", {"nvidia-cuda-runtime": "13.0.96"}) == "12.9"
    assert cuda_build("2.13.0+cpu", None) == "None"
    assert cuda_build(None, None) == "N/A"
    env = _draft(KV).section(SectionId.ENVIRONMENT)
    assert env is not None
    assert "CUDA used to build PyTorch   : 13.0 (from nvidia-cuda-runtime 13.0.96)" in env.body


def test_the_stack_probe_reads_an_annotated_cuda_line(tmp_path: Path) -> None:
    """torch 2.11's version.py annotates it: ``cuda: Optional[str] = '13.0'``."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "version.py").write_text(
        "from typing import Optional\n__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n"
    )
    info = site / "torch-2.11.0+cu130.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0+cu130\n")
    (info / "RECORD").write_text("torch/version.py,,\n")
    done = proc.run(
        [sys.executable, str(script("stack"))],
        env={"PYTHONPATH": str(site)},
        capture=True,
        timeout=60,
    )
    assert done.rc == 0, done.stderr
    stack = json.loads(done.stdout)
    assert (stack["torch"], stack["torch_cuda"]) == ("2.11.0+cu130", "13.0")


def test_the_cpu_reproduction_says_its_scripts_stand_in_for_vllm() -> None:
    env = _draft(FIXTURES / "report" / "thrmma-cpu").section(SectionId.ENVIRONMENT)
    assert env is not None
    assert "vLLM Version                 : not installed: this reproduction's own scripts " \
        "stand in for the vLLM code path" in env.body  # fmt: skip


def test_the_release_pins_keep_only_what_differs_and_say_why() -> None:
    resolve = Resolve({"vllm": "0.26.0", "torch": "2.11.0", "transformers": "5.24.0"}, {})
    machine = {"vllm": "0.26.0", "torch": "2.11.0+cu130", "transformers": "5.24.0", "jax": "0.7"}
    pins = from_resolve("0.26.0", resolve, machine)
    assert pins.lines == (
        "vllm==0.26.0",
        "torch==2.11.0+cu130  # the failing machine has 2.11.0+cu130; vllm 0.26.0 resolves 2.11.0",
    )
    assert pins.left_out == 1 and pins.local == ("torch==2.11.0+cu130",)
