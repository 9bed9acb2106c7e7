"""Every name in a run directory, in one place.

::

    RUN/run.jsonl               the journal: one typed event a line, append-only
    RUN/manifest.json           the recipe, the legs' records and errors, their hygiene
    RUN/envs/<key>.json .log    each leg's record and build log (a cluster run also keeps
                                nodes/<node>/envs/ per node)
    RUN/cells/<id>/result.json  a finished cell's result (written atomically)
    RUN/cells/<id>/log.txt      its log (log.previous.txt: the attempt before), out/ its
                                outputs, hang/ its stack dumps (hang.previous/)
    RUN/verdict.json summary.md summary.txt   a matrix's verdict, for people and tools
    RUN/recipe/                 the recipe's files its cells ran, as they were
    RUN/secrets.sha256          salted digests of the values the run knew to be secret

Only :mod:`vllmdiag.spine.rundir` opens these files; everything else asks it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

EVENTS = "run.jsonl"
MANIFEST = "manifest.json"
VERDICT = "verdict.json"
SUMMARY_MD = "summary.md"
SUMMARY_TXT = "summary.txt"
ENVS = "envs"
NODES = "nodes"
CELLS = "cells"
RESULT = "result.json"
LOG = "log.txt"
PREVIOUS_LOG = "log.previous.txt"
OUT = "out"
HANG = "hang"
PREVIOUS_HANG = "hang.previous"
#: The files of the recipe's folder that cells' commands ran (a workload's scripts), as
#: they were when the cell ran: a report drafted on another machine writes them out from
#: here.
RECIPE_FILES = "recipe"
#: Salted digests of the values the run knew to be secret (never the values: see
#: :func:`vllmdiag.services.redact.digests`), so that whatever reads the run back masks them.
SECRET_DIGESTS = "secrets.sha256"


def envs_dir(root: Path, node: str = "") -> Path:
    """Where the legs' records and build logs go (``node``: a cluster node's label)."""
    return root / NODES / node / ENVS if node else root / ENVS


def env_file(root: Path, key: str, node: str = "") -> Path:
    return envs_dir(root, node) / f"{key}.json"


def env_log(root: Path, key: str, node: str = "") -> Path:
    return envs_dir(root, node) / f"{key}.log"


def cells_dir(root: Path) -> Path:
    return root / CELLS


def cell_dir(root: Path, cell_id: str) -> Path:
    return root / CELLS / cell_id


def cell_log(root: Path, cell_id: str) -> Path:
    return cell_dir(root, cell_id) / LOG


def cell_out(root: Path, cell_id: str) -> Path:
    return cell_dir(root, cell_id) / OUT


def result_file(root: Path, cell_id: str) -> Path:
    return cell_dir(root, cell_id) / RESULT


def kept_recipe_file(root: Path, rel: Path) -> Path:
    """Where the run keeps the recipe's file ``rel`` (relative to the recipe's folder)."""
    return root / RECIPE_FILES / rel


def holds_run(path: Path) -> bool:
    """``path`` holds a run: a journal, or (a run copied without it) cells."""
    return (path / EVENTS).is_file() or (path / CELLS).is_dir()


def has_journal(path: Path) -> bool:
    return (path / EVENTS).is_file()


def journal_exists(path: Path) -> bool:
    """Something (a file, a directory) stands where ``path``'s journal would be."""
    return (path / EVENTS).exists()


def is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False
