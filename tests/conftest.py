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

from tests.support.paths import UV_CACHE


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
