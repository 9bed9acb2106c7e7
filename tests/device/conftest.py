"""The device suite: vllmdiag against a real vLLM on a real GPU.

Skipped unless ``VLLMDIAG_VLLM_PYTHON`` names a python with vLLM installed (the leg is
``path:`` to it), ``VLLMDIAG_TINY_MODELS`` a directory with the small random-weight
``llama/`` (and ``moe/``) models, and ``nvidia-smi`` sees a GPU. ``VLLMDIAG_DEVICE_OUT``,
if set, receives the run directories, so their logs, traces and benchmark JSON can be
kept as fixtures for the CPU tests.

vLLM's own caches (torch.compile, FlashInfer's JIT builds) live under ``$HOME/.cache``:
the suite gives every test one shared home, so only the first engine start pays them, as
on a user's machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

DEVICE_HOME = Path(os.environ.get("VLLMDIAG_DEVICE_HOME", "/tmp/vllmdiag-device-home"))


def _gpu_visible() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    done = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
    return done.returncode == 0 and "GPU" in done.stdout


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    missing = [v for v in ("VLLMDIAG_VLLM_PYTHON", "VLLMDIAG_TINY_MODELS") if not os.environ.get(v)]
    reason = (
        f"device suite: set {' and '.join(missing)}" if missing else "device suite: no GPU visible"
    )
    skip = pytest.mark.skip(reason=reason)
    ready = not missing and _gpu_visible()
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.device)
            if not ready:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _device_home(_isolated: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    DEVICE_HOME.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(DEVICE_HOME))
    monkeypatch.setenv("XDG_CACHE_HOME", str(DEVICE_HOME / ".cache"))
    yield


@pytest.fixture
def vllm_python() -> Path:
    return Path(os.environ["VLLMDIAG_VLLM_PYTHON"])


@pytest.fixture
def tiny_models() -> Path:
    return Path(os.environ["VLLMDIAG_TINY_MODELS"])


@pytest.fixture
def keep() -> Iterator[Path | None]:
    """Where to copy outputs worth keeping (None: nowhere)."""
    out = os.environ.get("VLLMDIAG_DEVICE_OUT")
    yield Path(out) if out else None
