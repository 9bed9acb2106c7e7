"""Leg hygiene on real environments: a venv made by uv, with distributions installed the
way an installer leaves them (dist-info with METADATA, RECORD and entry_points.txt)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag import codec
from vllmdiag.cli.app import app
from vllmdiag.readers.hygiene import doctor, known_env_vars
from vllmdiag.services.envs import Env, EnvCache, LegSpec
from vllmdiag.services.envs.uvtool import uv

PY = f"{sys.version_info.major}.{sys.version_info.minor}"

# The shape of vLLM 0.x's vllm/envs.py: an annotated dict of getters.
ENVS_DICT = """
import os
from typing import Any, Callable
environment_variables: dict[str, Callable[[], Any]] = {
    "VLLM_HOST_IP": lambda: os.getenv("VLLM_HOST_IP", ""),
    "VLLM_LOGGING_LEVEL": lambda: os.getenv("VLLM_LOGGING_LEVEL", "INFO").upper(),
    "VLLM_NO_USAGE_STATS": lambda: os.environ.get("VLLM_NO_USAGE_STATS", "0") == "1",
    'VLLM_PORT': lambda: None,
    "CUDA_VISIBLE_DEVICES": lambda: os.environ.get("CUDA_VISIBLE_DEVICES", None),
}
"""

# The shape of a newer vllm/envs: pydantic-settings classes with an env prefix.
ENVS_SETTINGS = """
from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict
class LoggingSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VLLM_", extra="ignore")
    logging_level: str = "INFO"
    configure_logging: int = 1
class UsageSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VLLM_")
    no_usage_stats: bool = False
    do_not_track: bool = Field(
        default=False, validation_alias=AliasChoices("VLLM_DO_NOT_TRACK", "DO_NOT_TRACK")
    )
    local_rank: int = Field(default=0, alias="LOCAL_RANK")
"""


def _dist(
    site: Path,
    name: str,
    version: str,
    *,
    entry_points: str = "",
    files: dict[str, str] | None = None,
    record_extra: tuple[str, ...] = (),
) -> None:
    norm = name.replace("-", "_")
    info = site / f"{norm}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("uv\n")
    record = [f"{info.name}/METADATA,,", f"{info.name}/INSTALLER,,", f"{info.name}/RECORD,,"]
    if entry_points:
        (info / "entry_points.txt").write_text(entry_points)
        record.append(f"{info.name}/entry_points.txt,,")
    for rel, text in (files or {}).items():
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        record.append(f"{rel},,")
    record += [f"{r},," for r in record_extra]
    (info / "RECORD").write_text("\n".join(record) + "\n")


def _leg(
    tmp_path: Path,
    name: str,
    *,
    omni: bool = False,
    vllm: str | None = ENVS_DICT,
    jit: str = "0.6.14",
    settings: bool = False,
) -> Env:
    venv = tmp_path / name
    uv("venv", "--quiet", "--python", PY, venv, what="uv venv")
    site = next((venv / "lib").glob("python*/site-packages"))
    script = venv / "bin" / "vllm"
    if vllm is not None:
        files = {"vllm/__init__.py": "", "vllm/plugins/__init__.py": ""}
        if settings:
            files["vllm/envs/__init__.py"] = "from vllm.envs.settings import *\n"
            files["vllm/envs/settings.py"] = ENVS_SETTINGS
        else:
            files["vllm/envs.py"] = vllm
        _dist(
            site,
            "vllm",
            "0.26.0",
            files=files,
            entry_points=(
                "[console_scripts]\nvllm = vllm.entrypoints.cli.main:main\n\n"
                "[vllm.general_plugins]\n"
                "lora_filesystem_resolver = vllm.plugins.lora_resolvers:register\n"
            ),
            record_extra=("../../../bin/vllm",),
        )
        script.write_text("#!/bin/sh\n")
    if omni:
        _dist(
            site,
            "vllm-omni",
            "0.11.0",
            files={"vllm_omni/__init__.py": ""},
            entry_points="[vllm.general_plugins]\nomni = vllm_omni.plugin:register\n\n"
            "[console_scripts]\nvllm = vllm_omni.entrypoints.cli.main:main\n",
            record_extra=("../../../bin/vllm",),
        )
    _dist(site, "flashinfer-python", "0.6.14", files={"flashinfer/__init__.py": ""})
    _dist(site, "flashinfer-jit-cache", f"{jit}+cu130")
    _dist(site, "flashinfer-cubin", "0.6.14")
    return EnvCache().ensure(LegSpec(name=name, existing=venv))


def test_clean_leg(tmp_path: Path) -> None:
    env = _leg(tmp_path, "clean")
    report = doctor(env, {"VLLM_LOGGING_LEVEL": "INFO"}, check_gpu=False)
    assert not report.contaminated, report.reasons()
    assert report.vllm == "0.26.0"
    codes = {f.code: f.severity for f in report.findings}
    assert codes["plugins"] == "ok"  # vLLM's own lora resolver is not a third-party plugin
    assert codes["vllm-script"] == "ok" and codes["flashinfer"] == "ok"
    assert known_env_vars(env) == frozenset(
        {
            "VLLM_HOST_IP",
            "VLLM_LOGGING_LEVEL",
            "VLLM_NO_USAGE_STATS",
            "VLLM_PORT",
            "CUDA_VISIBLE_DEVICES",
        }
    )


def test_omni_contaminated_leg(tmp_path: Path) -> None:
    env = _leg(tmp_path, "omni", omni=True, jit="0.6.6")
    report = doctor(env, {"VLLM_LOGGING_LEVEL": "DEBUG"}, check_gpu=False)
    assert report.contaminated
    bad = {f.code for f in report.findings if f.severity == "contaminated"}
    assert bad == {"plugin", "vllm-script", "flashinfer-mismatch"}
    text = " ".join(report.reasons())
    assert "vllm-omni registers vllm.general_plugins:omni" in text
    assert "flashinfer-jit-cache 0.6.6+cu130 does not match flashinfer-python 0.6.14" in text
    warn = {f.code for f in report.findings if f.severity == "warning"}
    assert "debug-usage-stats" in warn
    j = codec.dump(report)
    assert j["contaminated"] is True and j["leg"] == "omni"


def test_debug_hazard_is_off_with_usage_stats_disabled(tmp_path: Path) -> None:
    env = _leg(tmp_path, "dbg")
    run_env = {"VLLM_LOGGING_LEVEL": "DEBUG", "VLLM_NO_USAGE_STATS": "1"}
    codes = {f.code: f.severity for f in doctor(env, run_env, check_gpu=False).findings}
    assert codes["debug-usage-stats"] == "ok"


def test_no_vllm_no_known_vars(tmp_path: Path) -> None:
    env = _leg(tmp_path, "bare", vllm=None)
    assert known_env_vars(env) is None


def test_settings_style_envs_are_read(tmp_path: Path) -> None:
    env = _leg(tmp_path, "settings", settings=True)
    assert known_env_vars(env) == frozenset(
        {
            "VLLM_LOGGING_LEVEL",
            "VLLM_CONFIGURE_LOGGING",
            "VLLM_NO_USAGE_STATS",
            "VLLM_DO_NOT_TRACK",
            "LOCAL_RANK",
        }
    )


def test_cli_doctor(tmp_path: Path) -> None:
    runner = CliRunner()
    clean = _leg(tmp_path, "cli-clean")
    res = runner.invoke(app, ["doctor", str(clean.path), "--no-gpu", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["contaminated"] is False
    dirty = _leg(tmp_path, "cli-omni", omni=True)
    res = runner.invoke(app, ["doctor", str(dirty.path), "--no-gpu", "--json"])
    assert res.exit_code == 2, res.output
    assert json.loads(res.stdout)["contaminated"] is True
    res = runner.invoke(app, ["doctor", str(tmp_path / "nope")])
    assert res.exit_code == 1


@pytest.mark.parametrize("bad", ["VLLM_LOGGING_LEVEL", "=x"])
def test_cli_env_must_be_pairs(tmp_path: Path, bad: str) -> None:
    res = CliRunner().invoke(app, ["doctor", str(tmp_path), "--env", bad])
    assert res.exit_code == 1


def test_cli_doctor_recipe_form(tmp_path: Path) -> None:
    leg = _leg(tmp_path, "recipe-omni", omni=True)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        "name: hygiene-check\n"
        "question: is the leg clean?\n"
        "legs:\n"
        f"  omni:\n    path: {leg.path}\n"
        "baseline:\n  leg: omni\n"
        "workloads:\n  w:\n    command: ['{python}', '-c', 'pass']\n"
    )
    res = CliRunner().invoke(app, ["doctor", str(recipe), "omni", "--no-gpu", "--json"])
    assert res.exit_code == 2, res.output
    data = json.loads(res.stdout)
    assert data["leg"] == "omni" and data["contaminated"] is True
    res = CliRunner().invoke(app, ["doctor", str(recipe), "nope", "--no-gpu"])
    assert res.exit_code == 1


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.heavy
def test_real_vllm_and_vllm_omni_wheels(tmp_path: Path) -> None:
    """vLLM 0.18.0's own wheel (installed without its dependencies: only its files
    matter here), then the real vllm-omni plugin next to it."""
    from vllmdiag.model.arms import Arm
    from vllmdiag.model.inert import ArmEvidence, inert_reason

    venv = tmp_path / "vllm-0.18"
    uv("venv", "--quiet", "--python", PY, venv, what="uv venv")
    py = venv / "bin" / "python"
    uv("pip", "install", "--quiet", "--python", py, "--no-deps", "vllm==0.18.0", what="install")
    env = EnvCache().ensure(LegSpec(name="vllm-0.18", existing=venv))
    known = known_env_vars(env)
    assert known is not None and len(known) > 150
    assert "VLLM_LOGGING_LEVEL" in known and "VLLM_NO_USAGE_STATS" in known
    # removed before 0.18: an arm setting it does nothing on this leg
    assert "VLLM_ATTENTION_BACKEND" not in known
    legacy = Arm(name="attn", env={"VLLM_ATTENTION_BACKEND": "TRITON_ATTN"})
    assert inert_reason(ArmEvidence(legacy, known_env=known)) is not None
    clean = doctor(env, check_gpu=False)
    assert not clean.contaminated, clean.reasons()
    assert clean.vllm == "0.18.0"
    uv(
        "pip",
        "install",
        "--quiet",
        "--python",
        py,
        "--no-deps",
        "vllm-omni==0.30.0",
        what="install",
    )
    env = EnvCache().ensure(LegSpec(name="vllm-0.18-omni", existing=venv))
    dirty = doctor(env, check_gpu=False)
    assert dirty.contaminated
    assert {f.code for f in dirty.findings if f.severity == "contaminated"} == {"plugin"}
    assert "vllm-omni registers vllm.general_plugins:" in dirty.reasons()[0]
