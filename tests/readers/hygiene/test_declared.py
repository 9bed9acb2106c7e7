"""A leg whose installed packages break what a release declares it requires, for real: a
uv venv with flake8 7.1.1 from the index (it declares ``pyflakes<3.3.0,>=3.2.0``), then
pyflakes 3.3.2 installed over it without its resolver. The doctor names the break, the
manifest of a matrix on that ``path:`` leg keeps it, and a ``path:`` leg that cannot be
used is a finding of its own."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag import MatrixOptions, run_matrix
from vllmdiag.cli.app import app
from vllmdiag.model.outcome import Outcome
from vllmdiag.readers.hygiene import WARNING, requires
from vllmdiag.readers.hygiene.declared import CODE, declared, violations
from vllmdiag.readers.hygiene.doctor import DECLARED_VAR
from vllmdiag.services.config import load_recipe
from vllmdiag.services.envs import EnvCache, LegSpec
from vllmdiag.services.envs.uvtool import uv

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def flake8_leg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("declared") / "flake8-leg"
    uv("venv", "--quiet", "--python", PY, venv, what="uv venv")
    py = venv / "bin" / "python"
    uv("pip", "install", "--quiet", "--python", py, "flake8==7.1.1", what="install flake8")
    return venv


def _override(venv: Path) -> None:
    py = venv / "bin" / "python"
    uv("pip", "install", "--quiet", "--python", py, "--no-deps", "pyflakes==3.3.2", what="pin")


@pytest.mark.network
def test_a_release_whose_declared_pin_is_broken_is_a_finding(flake8_leg: Path) -> None:
    env = EnvCache().ensure(LegSpec(name="flake8-leg", existing=flake8_leg))
    clean = declared(requires(env, ("flake8",)))
    assert [(f.severity, f.code) for f in clean] == [("ok", CODE)]
    assert "flake8 7.1.1" in clean[0].message
    _override(flake8_leg)
    env = EnvCache().ensure(LegSpec(name="flake8-leg", existing=flake8_leg))
    report = requires(env, ("flake8", "not-installed-here"))
    assert report["dists"]["not-installed-here"] is None
    assert report["installed"]["pyflakes"] == "3.3.2"
    found = declared(report)
    assert len(found) == 1 and found[0].severity is WARNING and found[0].code == CODE
    assert found[0].message.startswith(
        "pyflakes 3.3.2 is installed where flake8 7.1.1 declares pyflakes<3.3.0,>=3.2.0"
    )
    assert (
        found[0].hint
        == "pin pyflakes<3.3.0,>=3.2.0 in the leg (or say why the other version is wanted)"
    )
    # the doctor shows it (a warning: the leg is not refused), with the release named
    res = CliRunner().invoke(
        app, ["doctor", str(flake8_leg), "--no-gpu", "--json"], env={DECLARED_VAR: "flake8"}
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert not data["contaminated"]
    codes = {f["code"]: f for f in data["findings"]}
    assert "pyflakes 3.3.2" in codes[CODE]["message"] and codes[CODE]["severity"] == "warning"


def test_markers_and_extras_that_do_not_apply_here_are_not_required() -> None:
    """pytest, as installed here, declares colorama on Windows only, tomli before 3.11
    and a dozen packages behind its ``dev`` extra: none of them is asked of this leg."""
    env = EnvCache().ensure(LegSpec(name="here", existing=Path(sys.executable)))
    report = requires(env, ("pytest",))
    lines = report["dists"]["pytest"]["requires"]
    assert any('sys_platform == "win32"' in r for r in lines)
    assert any('extra == "dev"' in r for r in lines)
    assert violations(report) == []


@pytest.mark.network
def test_the_manifest_keeps_the_finding_and_a_path_leg_that_cannot_be_used(
    flake8_leg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _override(flake8_leg)
    monkeypatch.setenv(DECLARED_VAR, "flake8")
    gone = tmp_path / "no-such-venv"
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        textwrap.dedent(
            f"""\
            name: declared
            question: does the leg hold what flake8 declares?
            legs:
              flake8:
                path: {flake8_leg}
              gone:
                path: {gone}
            baseline: {{leg: flake8}}
            arms:
              - name: other-leg
                leg: gone
            workloads:
              w: {{command: ["{{python}}", "-c", "print('ok')"]}}
            timeout: 60
            """
        )
    )
    report = run_matrix(load_recipe(recipe), MatrixOptions(out=tmp_path / "run"))
    outcomes = {c.arm: c.outcome for c in report.cells}
    assert outcomes == {"baseline": Outcome.PASS, "other-leg": Outcome.ERROR}
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    per_leg = manifest["hygiene"]["per_leg"]
    broken = [f for f in per_leg["flake8"]["findings"] if f["code"] == CODE]
    assert (
        len(broken) == 1
        and "pyflakes 3.3.2 is installed where flake8 7.1.1" in (broken[0]["message"])
    )
    failed = per_leg["gone"]["findings"]
    assert [f["code"] for f in failed] == ["leg-failed"] and failed[0]["severity"] == "warning"
    assert per_leg["gone"]["path"] == str(gone)
    # the doctor on that recipe shows both legs and exits 1 for the one it cannot use
    res = CliRunner().invoke(app, ["doctor", str(recipe), "--no-gpu", "--json"])
    assert res.exit_code == 1, res.output
    legs = {r["leg"]: r for r in json.loads(res.stdout)["legs"]}
    assert legs["gone"]["findings"][0]["code"] == "leg-failed"
    assert any(f["code"] == CODE and f["severity"] == "warning" for f in legs["flake8"]["findings"])
