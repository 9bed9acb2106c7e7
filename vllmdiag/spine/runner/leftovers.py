"""What an earlier vllmdiag, killed before it could clean up, left running for a run
directory, found and ended when the run is resumed."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from vllmdiag.events import Note, Observer
from vllmdiag.services import proc
from vllmdiag.spine.journal import RunDir
from vllmdiag.spine.runner.events import LeftoversEnded
from vllmdiag.spine.runner.executor import Node, NodeLost


def end_leftovers(
    run: RunDir, run_id: str, nodes: Sequence[Node], grace_s: float, emit: Observer[Any]
) -> None:
    """End processes carrying the run's cell tag (on every node), and the sessions its
    cells were started in on this machine (a pid reused since is told apart by its start
    time)."""
    found = set(proc.tagged(f"{run_id}:"))
    for ev in run.events():
        spawned = ev.get("event") == "cell_spawned" and isinstance(ev.get("pid"), int)
        if spawned and not ev.get("node"):  # another node's pids are not this machine's
            found |= proc.session_members(ev["pid"], int(ev.get("start_ticks") or 0))
    ended = set(proc.end(found, grace_s))
    for node in nodes:
        if node.remote:
            try:
                ended |= set(node.end_tagged(f"{run_id}:", grace_s))
            except NodeLost:
                continue  # it is left out when the legs are prepared
    if ended:
        pids = sorted(ended)
        emit(LeftoversEnded(tuple(pids)))
        emit(
            Note(
                "warning",
                f"ended {len(pids)} process(es) an earlier, killed run of this "
                f"directory left running (pids {', '.join(map(str, pids))})",
            )
        )


def run_id_of(run: RunDir) -> str:
    """The id an earlier start of this run directory gave it (older journals have none:
    then one derived from the directory, stable across resumes)."""
    for ev in run.events():
        if ev.get("event") == "run_started" and isinstance(ev.get("run_id"), str):
            return str(ev["run_id"])
    return hashlib.sha256(str(run.path.resolve()).encode()).hexdigest()[:16]
