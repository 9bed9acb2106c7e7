"""Where vllmdiag keeps things: the env/probe cache, the node lock and bundled data."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import platformdirs

PACKAGE_ROOT = Path(__file__).resolve().parent


def cache_root() -> Path:
    """The content-addressed cache (envs, probe results); ``VLLMDIAG_CACHE`` overrides."""
    override = os.environ.get("VLLMDIAG_CACHE")
    root = Path(override) if override else Path(platformdirs.user_cache_dir("vllmdiag"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def node_lock_path() -> Path:
    """The machine-wide lock that keeps two matrices off one node.

    It lives in the system temp dir, not the per-user cache, so that two users of one
    GPU node also exclude each other. ``VLLMDIAG_LOCK`` overrides.
    """
    override = os.environ.get("VLLMDIAG_LOCK")
    return Path(override) if override else Path(tempfile.gettempdir()) / "vllmdiag-node.lock"


def data_dir(name: str) -> Path:
    """A bundled data folder (``arms``, ``recipes``): the checkout's, else the wheel's."""
    checkout = PACKAGE_ROOT.parent / name
    if checkout.is_dir():
        return checkout
    return PACKAGE_ROOT / "_data" / name
