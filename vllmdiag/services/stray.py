"""Cell processes that earlier vllmdiag runs on this node left running, from any run.

Every cell's environment carries the cell tag (:data:`vllmdiag.services.proc.TAG_VAR`) and the node
it ran for (:data:`NODE_VAR`: the node lock's path), and everything the cell starts
inherits both, ``setsid`` escapees and reparented orphans included. While the node lock is
free no vllmdiag job runs cells on the node, so a live process carrying a tag for this
node is a leftover: of a vllmdiag killed with SIGKILL, or of a machine that lost power
mid-cleanup. A job that takes the lock ends them (:func:`end_strays`); ``doctor`` reports
them.

Limits: a process started with an emptied environment (``env -i``) carries no tag and is
not found here (the cell-end sweep in :mod:`vllmdiag.services.proc` ends those while vllmdiag still
runs); another user's processes cannot be read, so they are not found either. A process
tagged without a node (an older vllmdiag) counts as this node's only under the default lock.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.services import proc
from vllmdiag.services.paths import NODE_LOCK, node_lock_path

#: Which node lock a cell ran under (so a job under another lock, e.g. a test's, never
#: takes this node's cells for its own leftovers, nor the reverse).
NODE_VAR = "VLLMDIAG_CELL_NODE"
#: The vllmdiag process that ran the cell (``pid:start ticks``): while it lives, its cells
#: are its own (a lock file removed and made again under a running job must not make a
#: second job end the first one's engine).
OWNER_VAR = "VLLMDIAG_CELL_OWNER"


@dataclass(frozen=True)
class Stray:
    pid: int
    tag: str  # ``<run id>:<cell id>``
    #: The vllmdiag that runs it still does: a running job's cell, not a leftover.
    owned: bool = False

    @property
    def cell(self) -> str:
        return self.tag.partition(":")[2]


def owner_id(pid: int | None = None) -> str:
    """The value of :data:`OWNER_VAR` for cells this process (or ``pid``) runs."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{proc.start_ticks(pid)}"


def _owner_alive(owner: str | None) -> bool:
    pid = (owner or "").partition(":")[0]
    return pid.isdigit() and owner_id(int(pid)) == owner and proc.is_alive(int(pid))


def node_id(lock: Path | None = None) -> str:
    """The value of :data:`NODE_VAR` for cells run under ``lock`` (default: this node's)."""
    return os.path.abspath(lock or node_lock_path())


def _environ_var(pid: int, name: str) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    needle = name.encode() + b"="
    for item in raw.split(b"\0"):
        if item.startswith(needle):
            return item[len(needle) :].decode("utf-8", "replace")
    return None


def _ancestors() -> set[int]:
    out: set[int] = set()
    pid = os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            raw = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(raw[raw.rfind(")") + 2 :].split()[1])
    return out


def strays(lock: Path | None = None) -> list[Stray]:
    """Live tagged processes of this node's cells (this process and its ancestors left
    out: a vllmdiag started inside a cell is not its own leftover); ``owned`` marks
    those whose vllmdiag still runs (that job's cells, not leftovers)."""
    here = node_id(lock)
    default = here == os.path.abspath(NODE_LOCK)
    mine = _ancestors()
    found = []
    for pid, tag in sorted(proc.tagged("").items()):
        if pid in mine:
            continue
        node = _environ_var(pid, NODE_VAR)
        if not (node == here or (node is None and default)):
            continue
        found.append(Stray(pid, tag, _owner_alive(_environ_var(pid, OWNER_VAR))))
    return found


def end_strays(grace_s: float = proc.DEFAULT_GRACE_S, lock: Path | None = None) -> list[Stray]:
    """End this node's leftover cell processes (TERM, then KILL after ``grace_s``); returns
    those that were running. Call it only while holding the node lock."""
    found = [s for s in strays(lock) if not s.owned]
    if not found:
        return []
    ended = proc.end({s.pid for s in found}, grace_s)
    return [s for s in found if s.pid in ended]


def describe(found: list[Stray]) -> str:
    """``pid 12 (cell r1.base.w1), pid 13 (...)``, cells as their tags name them."""
    return ", ".join(f"pid {s.pid} (cell {s.cell or s.tag})" for s in found)
