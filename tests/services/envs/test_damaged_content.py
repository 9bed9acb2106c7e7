"""A leg damaged in its content (a file RECORD lists is there, truncated or overwritten)
is found by its hash and rebuilt, never reused into a ``fail``; legs are built with copies
of uv's cache, so a write into one reaches neither the cache nor another leg; and the
content check hashes each file once while it stays the same."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from vllmdiag import MatrixOptions, RunOptions, probes, run_matrix
from vllmdiag.model.outcome import Outcome
from vllmdiag.services import proc
from vllmdiag.services.config import load_recipe
from vllmdiag.services.envs import EnvCache, EnvEvent, LegSpec

pytestmark = pytest.mark.network


def _version_py(env_path: Path) -> Path:
    return next((env_path / "lib").glob("python3*/site-packages")) / "packaging" / "version.py"


def test_a_truncated_file_is_found_by_its_content_and_rebuilt(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path)
    spec = LegSpec("t", ("packaging==21.3",))
    env = cache.ensure(spec)
    target = _version_py(env.path)
    assert os.stat(target).st_nlink == 1  # a copy, not a link into uv's cache
    with open(target, "r+b") as fh:
        fh.truncate(100)
    seen: list[EnvEvent] = []
    again = cache.ensure(spec, observer=seen.append)
    assert [e.kind for e in seen] == ["damaged", "building", "ready"]
    assert "not its RECORD's" in seen[0].detail and "packaging/version.py" in seen[0].detail
    assert os.path.getsize(_version_py(again.path)) > 100
    assert cache.ensure(spec).reused


def test_an_overwrite_of_the_same_size_is_found_and_reaches_no_other_leg(
    tmp_path: Path,
) -> None:
    one = EnvCache(tmp_path / "one").ensure(LegSpec("a", ("packaging==21.3",)))
    other_cache = EnvCache(tmp_path / "two")
    other = other_cache.ensure(LegSpec("b", ("packaging==21.3",)))
    target = _version_py(one.path)
    size = target.stat().st_size
    target.write_bytes(b"#" * size)  # same size: only the hash tells
    assert _version_py(other.path).read_bytes() != target.read_bytes()  # not shared
    seen: list[EnvEvent] = []
    EnvCache(tmp_path / "one").ensure(LegSpec("a", ("packaging==21.3",)), observer=seen.append)
    assert seen[0].kind == "damaged" and "version.py" in seen[0].detail


def test_each_file_is_hashed_once_while_it_stays_the_same(tmp_path: Path) -> None:
    env = EnvCache(tmp_path).ensure(LegSpec("h", ("packaging==21.3",)))
    cache = tmp_path / "verified.json"

    def check() -> dict[str, int]:
        argv = [str(env.python), str(probes.script("installed")), "--verified", str(cache)]
        report: dict[str, int] = json.loads(proc.check_output([*argv, "packaging"]))
        return report

    first, second = check(), check()
    assert first["hashed_files"] > 20 and second["hashed_files"] == 0
    os.utime(_version_py(env.path))  # a new mtime: hashed again (and still fine)
    third = check()
    assert third["hashed_files"] == 1 and third["damaged"] == {}  # type: ignore[comparison-overlap]


def test_a_damaged_leg_is_never_a_fail(tmp_path: Path) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: dmg
            question: does packaging import?
            legs:
              base:
                python: "{sys.version_info.major}.{sys.version_info.minor}"
                requirements: [packaging==21.3]
            baseline: {{leg: base}}
            workloads:
              w: {{command: ["{{python}}", "-c", "import packaging.version as v; v.Version('1')"]}}
            """
        )
    )
    recipe = load_recipe(path)
    cache = EnvCache(tmp_path / "cache")
    first = run_matrix(recipe, MatrixOptions(out=tmp_path / "a", run=RunOptions(cache=cache)))
    assert [r.outcome for r in first.cells] == [Outcome.PASS]
    leg = next(iter(first.envs.values()))
    _version_py(Path(leg.path)).write_text("raise AttributeError('damaged')\n")
    second = run_matrix(recipe, MatrixOptions(out=tmp_path / "b", run=RunOptions(cache=cache)))
    assert [r.outcome for r in second.cells] == [Outcome.PASS]  # rebuilt, not a fail


def test_a_damaged_file_in_uvs_cache_is_fetched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leg hardlinked from uv's cache (by uv's default, or by an older vllmdiag) and
    then edited in place damages the cache itself: a build copies the damage, finds it,
    and builds again with the package fetched afresh."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))  # damaged on purpose
    from vllmdiag.services.envs.uvtool import uv

    uv("venv", "--quiet", tmp_path / "scratch")
    uv("pip", "install", "--quiet", "--python", tmp_path / "scratch", "packaging==21.3")
    linked = _version_py(tmp_path / "scratch")
    assert os.stat(linked).st_nlink > 1  # uv's default: a hardlink into its cache
    with open(linked, "r+b") as fh:
        fh.truncate(10)
    env = EnvCache(tmp_path / "c").ensure(LegSpec("r", ("packaging==21.3",)))
    assert os.path.getsize(_version_py(env.path)) > 100
    assert os.stat(_version_py(env.path)).st_nlink == 1
