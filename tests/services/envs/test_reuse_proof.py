"""A cached env proves itself on reuse: a damaged one is rebuilt (never reused into a
wrong verdict), a damaged marker too; a damaged existing env is an error."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from vllmdiag import MatrixOptions, RunOptions, run_matrix
from vllmdiag.errors import EnvError
from vllmdiag.model.outcome import Outcome
from vllmdiag.services.config import load_recipe
from vllmdiag.services.envs import EnvCache, EnvEvent, LegSpec
from vllmdiag.services.envs.cache import MARKER

pytestmark = pytest.mark.network


def site_packages(env_path: Path) -> Path:
    return next((env_path / "lib").glob("python3*/site-packages"))


def test_a_removed_package_directory_is_found_and_rebuilt(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path)
    spec = LegSpec("old", ("packaging==21.3",))
    env = cache.ensure(spec)
    shutil.rmtree(site_packages(env.path) / "packaging")  # the marker stays intact
    assert cache.lookup(spec) is None
    seen: list[EnvEvent] = []
    again = cache.ensure(spec, observer=seen.append)
    assert [e.kind for e in seen] == ["damaged", "building", "ready"]
    assert "packaging lacks" in seen[0].detail and "packaging/__init__.py" in seen[0].detail
    assert not again.reused and (site_packages(again.path) / "packaging/version.py").exists()
    assert cache.ensure(spec).reused


def test_a_removed_dependency_of_a_requirement_is_found(tmp_path: Path) -> None:
    """A requirement whose code lives in a dependency (as nvidia-cutlass-dsl's does)."""
    cache = EnvCache(tmp_path)
    spec = LegSpec("req", ("requests==2.32.3",))
    env = cache.ensure(spec)
    shutil.rmtree(site_packages(env.path) / "idna")
    seen: list[EnvEvent] = []
    cache.ensure(spec, observer=seen.append)
    assert seen[0].kind == "damaged" and "idna lacks" in seen[0].detail


@pytest.mark.parametrize(
    "marker", ["[]\n", '{"schema": 1}\n', '{"schema": 1, "key": 5, "python": null}\n']
)
def test_a_marker_that_is_not_a_marker_is_rebuilt_with_a_warning(
    tmp_path: Path, marker: str
) -> None:
    cache = EnvCache(tmp_path)
    spec = LegSpec("m", ("packaging==21.3",))
    env = cache.ensure(spec)
    (env.path / MARKER).write_text(marker)
    seen: list[EnvEvent] = []
    rebuilt = cache.ensure(spec, observer=seen.append)
    assert seen[0].kind == "damaged" and "marker" in seen[0].detail
    assert not rebuilt.reused and json.loads((env.path / MARKER).read_text())["key"] == spec.key()


def test_a_damaged_existing_env_is_an_error_not_a_result(tmp_path: Path) -> None:
    built = EnvCache(tmp_path / "c").ensure(LegSpec("b", ("packaging==21.3",)))
    shutil.rmtree(site_packages(built.path) / "packaging")
    existing = LegSpec("prebuilt", ("packaging==21.3",), existing=built.path)
    with pytest.raises(EnvError, match="the environment is damaged: packaging lacks"):
        EnvCache(tmp_path / "d").ensure(existing)


def test_a_damaged_pin_leg_does_not_turn_a_sufficient_pin_into_ruled_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: pin
        question: does packaging 22.0 fix it?
        legs:
          base:
            python: "{sys.version_info.major}.{sys.version_info.minor}"
            requirements: [packaging==21.3]
        baseline: {{leg: base}}
        workloads:
          w:
            command:
              - "{{python}}"
              - "-c"
              - "import sys, packaging; sys.exit(packaging.__version__ != '22.0')"
        arms:
          - {{name: pin-22, pin: packaging==22.0}}
        """)
    )
    recipe = load_recipe(path)
    cache = EnvCache(tmp_path / "cache")
    first = run_matrix(recipe, MatrixOptions(out=tmp_path / "a", run=RunOptions(cache=cache)))
    assert {a.name: a.effect.value for a in first.verdict.arms} == {"pin-22": "sufficient"}

    pinned = next(e for e in first.envs.values() if e.pins == ("packaging==22.0",))
    shutil.rmtree(site_packages(Path(pinned.path)) / "packaging")
    notes: list[object] = []
    second = run_matrix(
        recipe, MatrixOptions(out=tmp_path / "b", run=RunOptions(cache=cache)), notes.append
    )
    assert {a.name: a.effect.value for a in second.verdict.arms} == {"pin-22": "sufficient"}
    assert [r.outcome for r in second.cells] == [Outcome.FAIL, Outcome.PASS]
    damaged = [n for n in notes if isinstance(n, EnvEvent) and n.kind == "damaged"]
    assert len(damaged) == 1 and damaged[0].leg == "base+packaging==22.0"


def test_an_existing_env_whose_file_differs_from_record_is_used_not_refused(
    tmp_path: Path,
) -> None:
    """A machine image may patch a file of an installed package (certifi's CA bundle, on
    the H200 image that stages vLLM): an environment vllmdiag did not build is the user's,
    so an altered file is no reason to refuse it, where a missing one is."""
    built = EnvCache(tmp_path / "c").ensure(LegSpec("b", ("packaging==21.3",)))
    version_py = site_packages(built.path) / "packaging" / "version.py"
    version_py.write_text(version_py.read_text() + "\n# patched by the image\n")
    existing = LegSpec("prebuilt", ("packaging==21.3",), existing=built.path)
    env = EnvCache(tmp_path / "d").ensure(existing)
    assert env.reused and env.installed()["packaging"] == "21.3"
    # built by vllmdiag, the same change is damage and the env is rebuilt
    seen: list[EnvEvent] = []
    EnvCache(tmp_path / "c").ensure(LegSpec("b", ("packaging==21.3",)), observer=seen.append)
    assert seen[0].kind == "damaged" and "packaging/version.py" in seen[0].detail
