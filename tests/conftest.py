"""Test isolation: nothing a test does touches the real home, cache or node lock.

uv's download cache (gigabytes, once legs with real wheels are built) lives outside the
checkout, in the system temp dir, one per user: repeated local runs on one machine reuse
it and stay fast; ``VLLMDIAG_TEST_UV_CACHE`` names another place.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import checkout
from tests.support.paths import REPO, UV_CACHE

_CHECKOUT = pytest.StashKey[set[str]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_CHECKOUT] = checkout.files(REPO)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A suite that left something in the checkout fails, naming what it left."""
    before = session.config.stash.get(_CHECKOUT, None)
    if before is None or hasattr(session.config, "workerinput"):
        return
    left = checkout.left_behind(REPO, before)
    if left:
        shown = ", ".join(left[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"\nerror: the tests left this in the checkout: {shown}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _isolated(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("VLLMDIAG_CACHE", str(_shared_cache(tmp_path_factory)))
    monkeypatch.setenv("VLLMDIAG_LOCK", str(home / "node.lock"))
    monkeypatch.setenv("UV_CACHE_DIR", str(UV_CACHE))
    for var in list(os.environ):
        if var.startswith("VLLM_"):
            monkeypatch.delenv(var)
    yield


_CACHE: list[Path] = []


def _shared_cache(factory: pytest.TempPathFactory) -> Path:
    """One env cache for the whole session: envs are content-addressed, so tests that ask
    for the same leg share it, as a user's repeated runs would."""
    if not _CACHE:
        _CACHE.append(factory.mktemp("vllmdiag-cache"))
    return _CACHE[0]
