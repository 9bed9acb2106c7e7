"""What the tests leave in the checkout: nothing. The suite lists the checkout's files when
it starts and again when it ends; a file or folder that appeared in between (a run
directory under ``./runs``, a trace written beside a fixture) fails the run, named."""

from __future__ import annotations

import os
from pathlib import Path

#: Folders whose files the tests never write, walked in full; the checkout's top level is
#: listed too (a ``runs/`` a test created from the checkout's folder).
WALKED = ("tests", "vllmdiag", "recipes", "arms", "docs", "benchmarks")
#: What Python and the tools write beside the sources by themselves.
IGNORED_DIRS = {".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}


def files(root: Path) -> set[str]:
    """The checkout's entries, relative to ``root``: its top level, and every file and
    folder under :data:`WALKED`, less what Python and the tools keep for themselves."""
    found = {
        entry.name
        for entry in os.scandir(root)
        if entry.name not in IGNORED_DIRS and not entry.name.startswith(".coverage")
    }
    for top in WALKED:
        for folder, dirs, names in os.walk(root / top):
            dirs[:] = [d for d in dirs if d not in IGNORED_DIRS]
            rel = Path(folder).relative_to(root)
            found.update(str(rel / name) for name in dirs + names)
    return found


def left_behind(root: Path, before: set[str]) -> list[str]:
    """What appeared in the checkout since ``before`` was listed."""
    return sorted(files(root) - before)
