"""``measuring()``: the one context every job that runs cells works in.

It holds this machine's node lock, so no two vllmdiag jobs measure each other (a matrix,
a bisect step, a profile capture, a study all take it), and it turns SIGTERM and SIGHUP
into a stop exactly like Ctrl-C, so a batch scheduler or ``timeout`` ends the running
cell's whole process tree and the run is journaled as interrupted. The cell runner
refuses to run outside it.

Once it holds the lock it ends the cell processes earlier runs on this node left running
(any run's: a vllmdiag killed with SIGKILL cannot clean up), says which, and keeps them for
the run's journal (:func:`strays_ended`); one that outlives TERM and KILL (stuck in the
kernel) makes the job refuse to start, naming its pid.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note, Observer, ignore
from vllmdiag.services import proc
from vllmdiag.services.locks import file_lock
from vllmdiag.services.paths import node_lock_path
from vllmdiag.services.stray import Stray, describe, end_strays

_held = threading.local()


@contextmanager
def measuring(
    *,
    wait: bool = False,
    observer: Observer[Note] = ignore,
    grace_s: float = proc.DEFAULT_GRACE_S,
) -> Iterator[proc.StopState]:
    """Hold the node lock (``wait``: queue behind a holder instead of refusing), end what
    earlier runs left running (TERM, KILL after ``grace_s``), and stop on SIGTERM/SIGHUP as
    on Ctrl-C; the yielded state says which signal stopped the job. Nested use (a job
    inside a job) takes the lock once."""
    if is_measuring():
        yield proc.StopState()
        return

    def waiting(holder: str) -> None:
        observer(Note("info", f"waiting for the node lock (held by pid {holder})"))

    lock = file_lock(node_lock_path(), wait=wait, what="the node lock", on_wait=waiting)
    with proc.stop_signals() as stop, lock:
        _held.active = True
        _held.stop = stop
        _held.strays = []
        try:
            ended = end_strays(grace_s)
            survivors = [s for s in ended if proc.is_alive(s.pid)]
            if survivors:
                raise VllmdiagError(
                    f"{len(survivors)} process(es) an earlier, killed run left running on this "
                    f"node outlive TERM and KILL: {describe(survivors)}",
                    where=str(node_lock_path()),
                    hint="they would measure against this job: end them (as their owner, "
                    "or as root: kill -9 " + " ".join(str(s.pid) for s in survivors) + "), "
                    "then run again",
                )
            if ended:
                _held.strays = ended
                observer(
                    Note(
                        "warning",
                        f"ended {len(ended)} process(es) an earlier, killed run left "
                        f"running on this node: {describe(ended)}",
                    )
                )
            yield stop
        finally:
            _held.active = False
            _held.stop = None
            _held.strays = []


def is_measuring() -> bool:
    """True inside :func:`measuring` (on this thread)."""
    return bool(getattr(_held, "active", False))


def stopped_by() -> str | None:
    """The signal that stopped the job being measured, once one has."""
    stop = getattr(_held, "stop", None)
    return stop.signame if isinstance(stop, proc.StopState) else None


def strays_ended() -> list[Stray]:
    """What :func:`measuring` ended when it took the lock, once (the run that journals
    them takes them; a second call returns nothing)."""
    found: list[Stray] = list(getattr(_held, "strays", []))
    _held.strays = []
    return found
