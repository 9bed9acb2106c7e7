"""Legs as real uv environments against the real package index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag.cli.app import app
from vllmdiag.errors import EnvError
from vllmdiag.services.envs import EnvCache, EnvEvent, LegSpec
from vllmdiag.services.envs.cache import MARKER

pytestmark = pytest.mark.network


def test_build_reuse_and_rebuild_when_the_marker_or_python_is_broken(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path)
    seen: list[EnvEvent] = []
    spec = LegSpec("old-packaging", ("packaging==21.3",))
    env = cache.ensure(spec, observer=seen.append)
    assert [e.kind for e in seen] == ["building", "ready"]
    assert env.installed()["packaging"] == "21.3"
    assert env.stack.python and env.stack.vllm is None
    assert "packaging==21.3" in env.freeze and len(env.lock_hash) == 16
    again = cache.ensure(spec, observer=seen.append)
    assert again.reused and again.lock_hash == env.lock_hash and seen[-1].kind == "reused"

    (env.path / MARKER).write_text("{ torn")
    rebuilt = cache.ensure(spec, observer=seen.append)
    assert not rebuilt.reused and seen[-1].kind == "ready"
    (rebuilt.python).unlink()
    assert cache.lookup(spec) is None
    assert not cache.ensure(spec).reused


def test_a_pin_arm_derives_its_own_leg(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path)
    base = LegSpec("base", ("packaging==21.3",))
    pinned = base.with_pin("packaging==22.0")
    env = cache.ensure(pinned)
    assert env.installed()["packaging"] == "22.0"
    assert env.path != cache.path_for(base)
    assert env.record().pins == ("packaging==22.0",)


def test_a_pin_that_does_not_hold_is_an_error(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path)
    built = cache.ensure(LegSpec("built", ("packaging==21.3",)))
    existing = LegSpec("prebuilt", ("packaging==22.0",), existing=built.path)
    with pytest.raises(EnvError, match="pin did not hold") as info:
        cache.ensure(existing)
    assert "packaging==21.3 does not satisfy packaging==22.0" in info.value.message


def test_exclude_newer_resolves_as_of_a_day(tmp_path: Path) -> None:
    env = EnvCache(tmp_path).ensure(LegSpec("as-of", ("packaging",), exclude_newer="2021-01-01"))
    assert env.installed()["packaging"] == "20.8"


def test_unresolvable_and_missing_python_are_clear_errors(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path)
    with pytest.raises(EnvError, match="install failed") as info:
        cache.ensure(LegSpec("bad", ("packaging==0.0.0.1",)))
    assert info.value.where == "leg bad"
    assert not cache.path_for(LegSpec("bad", ("packaging==0.0.0.1",))).exists()
    with pytest.raises(EnvError, match=r"Python 3\.99") as missing:
        cache.ensure(LegSpec("nopy", ("packaging",), python="3.99"))
    assert missing.value.hint is not None and "does not download" in missing.value.hint


def test_existing_env_is_adopted_untouched(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path)
    built = cache.ensure(LegSpec("built", ("packaging==21.3",)))
    marker = (built.path / MARKER).read_text()
    adopted = cache.ensure(LegSpec("mine", existing=built.python))
    assert adopted.path == built.path and adopted.installed()["packaging"] == "21.3"
    assert (built.path / MARKER).read_text() == marker
    with pytest.raises(EnvError, match="no working python"):
        cache.ensure(LegSpec("gone", existing=tmp_path / "nowhere"))


def test_leg_cli_build_and_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLMDIAG_CACHE", str(tmp_path / "own-cache"))
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        "name: legs\nquestion: q\nlegs:\n  a: {requirements: [packaging==21.3]}\n"
        'baseline: {leg: a}\nworkloads:\n  w: {command: ["{python}", "-c", "1"]}\n'
        "arms:\n  - {name: newer, pin: packaging==22.0}\n"
    )
    runner = CliRunner()
    shown = runner.invoke(app, ["leg", "show", str(recipe), "newer", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["legs"][0]["built"] is False
    built = runner.invoke(app, ["leg", "build", str(recipe), "--json"])
    assert built.exit_code == 0, built.output
    legs = {leg["leg"]: leg for leg in json.loads(built.stdout)["legs"]}
    assert set(legs) == {"a", "a+packaging==22.0"}
    shown = runner.invoke(app, ["leg", "show", str(recipe), "a", "--json"])
    assert json.loads(shown.stdout)["legs"][0]["built"] is True
    bad = runner.invoke(app, ["leg", "show", str(recipe), "nwer"])
    assert bad.exit_code == 1 and "did you mean 'newer'" in bad.output
