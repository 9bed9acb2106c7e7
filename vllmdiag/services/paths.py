"""Where vllmdiag keeps things: the env/probe cache, the node lock and bundled data."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from vllmdiag.errors import EnvError

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # vllmdiag/services/paths.py -> vllmdiag/

#: One per machine whatever the user's ``TMPDIR``: a lock under a per-user temp dir
#: would let two users (or one with another TMPDIR) run matrices on one GPU at once.
NODE_LOCK = Path("/tmp/vllmdiag-node.lock")


def cache_root() -> Path:
    """The content-addressed cache (envs, probe results); ``VLLMDIAG_CACHE`` overrides."""
    override = os.environ.get("VLLMDIAG_CACHE")
    root = Path(override) if override else Path(platformdirs.user_cache_dir("vllmdiag"))
    where = f"{root} (VLLMDIAG_CACHE)" if override else str(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise EnvError(
            "the cache location is a file, not a directory",
            where=where,
            hint="point VLLMDIAG_CACHE at a directory (or unset it to use the default)",
        ) from None
    except OSError as exc:
        raise EnvError(
            f"cannot create the cache directory: {exc.strerror}",
            where=where,
            hint="point VLLMDIAG_CACHE at a directory you can write",
        ) from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise EnvError(
            "the cache directory is not writable",
            where=where,
            hint="point VLLMDIAG_CACHE at a directory you can write",
        )
    return root


def node_lock_path() -> Path:
    """The machine-wide lock that keeps two matrices off one node.

    A fixed path in ``/tmp`` (not the per-user cache, not ``$TMPDIR``), so two users of
    one GPU node, or one user with two ``TMPDIR`` settings, exclude each other.
    ``VLLMDIAG_LOCK`` names another path (for a node whose ``/tmp`` is not shared).
    """
    override = os.environ.get("VLLMDIAG_LOCK")
    return Path(override) if override else NODE_LOCK


def data_dir(name: str) -> Path:
    """A bundled data folder (``arms``, ``recipes``): the checkout's, else the wheel's."""
    checkout = PACKAGE_ROOT.parent / name
    if checkout.is_dir():
        return checkout
    return PACKAGE_ROOT / "_data" / name
