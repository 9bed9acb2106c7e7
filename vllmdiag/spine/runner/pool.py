"""Cells (and leg builds) on worker threads, one journal on the main thread.

Each running cell has a thread that blocks in its executor; whatever a thread reports
(ticks, spawned processes, its result) travels through one queue to the main thread,
which alone emits events and writes results, in the order they happen. Ctrl-C, SIGTERM
and SIGHUP arrive on the main thread: it sets every running cell's cancel event (their
trees are ended on their nodes, as on Ctrl-C) and waits for them, so a stopped run is
journaled with every cell that finished and nothing left running.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from vllmdiag.events import Note, Observer
from vllmdiag.model.outcome import CellResult
from vllmdiag.services import proc
from vllmdiag.spine.runner.executor import NodeLost
from vllmdiag.spine.runner.slots import GpuNeed, Placement, SlotScheduler

T = TypeVar("T")
#: How often the main thread looks again at what could start (seconds).
_POLL_S = 0.5


@dataclass(frozen=True)
class Job:
    """A cell waiting for a slot: ``eligible`` names the nodes that have its leg;
    ``whole``: it sets ``CUDA_VISIBLE_DEVICES`` itself, so it holds a whole node."""

    index: int
    cell_id: str
    need: GpuNeed
    eligible: frozenset[str]
    whole: bool = False


@dataclass(frozen=True)
class Finished:
    """What a cell's thread came to: its result (None: it was interrupted) and, when its
    node left the cluster, that node."""

    result: CellResult | None
    lost_node: str | None = None


#: Starts a job on the main thread (journals it, prepares its directory) and returns the
#: work its thread does: given the thread's observer, it runs the cell and judges it.
Starter = Callable[[Job, Placement, threading.Event], Callable[[Observer[Any]], Finished]]


@dataclass(frozen=True)
class _Event:
    event: object


@dataclass(frozen=True)
class _Done:
    cell_id: str
    finished: Finished


@dataclass(frozen=True)
class _Crash:
    cell_id: str
    error: BaseException


_Message = _Event | _Done | _Crash


@dataclass
class _Active:
    job: Job
    placement: Placement
    cancel: threading.Event
    thread: threading.Thread


class CellPool:
    """Runs jobs as the scheduler's slots allow (see the module's docstring)."""

    def __init__(
        self,
        scheduler: SlotScheduler,
        emit: Observer[Any],
        start: Starter,
        on_finished: Callable[[Job, Finished], None],
        unrunnable: Callable[[Job, str], None],
    ) -> None:
        self.scheduler = scheduler
        self.emit = emit
        self.start = start
        self.on_finished = on_finished
        self.unrunnable = unrunnable
        self.queue: queue.Queue[_Message] = queue.Queue()
        self.running: dict[str, _Active] = {}
        self.interrupted = False
        self.added: list[Job] = []

    def add(self, jobs: Sequence[Job]) -> None:
        """More jobs, from the main thread while the pool runs (a finished cell's
        follow-ups): they go before the jobs still waiting."""
        self.added.extend(jobs)

    def run(self, jobs: Sequence[Job]) -> bool:
        """Run every job; True when the run was stopped (Ctrl-C, a stop signal)."""
        pending = list(jobs)
        try:
            while pending or self.running or self.added:
                if self.added:
                    pending, self.added = [*self.added, *pending], []
                if not self.interrupted:
                    pending = self._dispatch(pending)
                    if pending and not self.running:  # a node was lost meanwhile: once more
                        pending = self._dispatch(pending)
                    if pending and not self.running:  # nothing runs, nothing fits: never will
                        for job in pending:
                            self.unrunnable(job, "no node has room for it")
                        pending = []
                if not self.running:
                    break
                with contextlib.suppress(queue.Empty):
                    self._handle(self.queue.get(timeout=_POLL_S))
        except KeyboardInterrupt:
            self.interrupted = True
            self._stop()
        except BaseException:
            self._stop()
            raise
        return self.interrupted

    def _dispatch(self, pending: list[Job]) -> list[Job]:
        waiting = []
        for job in pending:
            live = job.eligible & self.scheduler.live()
            why = self.scheduler.unplaceable(job.need, live)
            if why is not None:
                self.unrunnable(job, why)
                continue
            placement = self.scheduler.place(job.need, live, whole=job.whole)
            if placement is None:
                waiting.append(job)
                continue
            cancel = threading.Event()
            try:
                work = self.start(job, placement, cancel)
            except NodeLost as exc:  # asked before the start (its bench dialect): try again
                self.scheduler.release(placement)
                self._lost(exc.node, exc.message)
                waiting.append(job)
                continue
            except BaseException:
                self.scheduler.release(placement)
                raise
            thread = threading.Thread(
                target=self._work, args=(job.cell_id, work, cancel), daemon=True
            )
            self.running[job.cell_id] = _Active(job, placement, cancel, thread)
            thread.start()
        return waiting

    def _work(
        self, cell_id: str, work: Callable[[Observer[Any]], Finished], cancel: threading.Event
    ) -> None:
        def relay(event: object) -> None:
            self.queue.put(_Event(event))

        with proc.cancel_scope(cancel):
            try:
                self.queue.put(_Done(cell_id, work(relay)))
            except BaseException as exc:  # handed to the main thread, which raises it
                self.queue.put(_Crash(cell_id, exc))

    def _handle(self, message: _Message) -> None:
        if isinstance(message, _Event):
            self.emit(message.event)
            return
        active = self.running.pop(message.cell_id)
        active.thread.join()
        self.scheduler.release(active.placement)
        if isinstance(message, _Crash):
            raise message.error
        outcome = message.finished
        if outcome.lost_node is not None:
            why = outcome.result.reason if outcome.result is not None else "it left the cluster"
            self._lost(outcome.lost_node, why)
        if outcome.result is None:
            self.interrupted = True
            for other in self.running.values():
                other.cancel.set()
        self.on_finished(active.job, outcome)

    def _lost(self, node: str, why: str) -> None:
        if node in self.scheduler.live():
            self.scheduler.drop(node)
            left = len(self.scheduler.live())
            self.emit(Note("warning", f"{why}; the remaining cells run on the {left} node(s) left"))

    def _stop(self) -> None:
        """End every running cell and wait for each to report (another Ctrl-C or stop
        signal meanwhile is ignored: the run is already stopping)."""
        for active in self.running.values():
            active.cancel.set()
        failure: BaseException | None = None
        while self.running:
            try:
                self._handle(self.queue.get(timeout=_POLL_S))
            except queue.Empty:
                continue
            except KeyboardInterrupt:
                for active in self.running.values():
                    active.cancel.set()
            except BaseException as exc:  # keep draining; the first failure is raised
                failure = failure or exc
        if failure is not None:
            raise failure


def in_threads(
    jobs: Sequence[Callable[[Observer[Any]], T]], emit: Observer[Any]
) -> list[T | BaseException]:
    """Run each job on a thread of its own; what they emit reaches ``emit`` on this
    thread. Ctrl-C here stops them all (their children are ended) and is raised once
    they have; each job's result, or what it raised, in order."""
    results: list[T | BaseException] = [RuntimeError("did not finish")] * len(jobs)
    events: queue.Queue[object] = queue.Queue()
    cancel = threading.Event()
    done = threading.Semaphore(0)

    def body(i: int, job: Callable[[Observer[Any]], T]) -> None:
        with proc.cancel_scope(cancel):
            try:
                results[i] = job(events.put)
            except BaseException as exc:
                results[i] = exc
            finally:
                done.release()

    threads = [threading.Thread(target=body, args=(i, j), daemon=True) for i, j in enumerate(jobs)]
    for thread in threads:
        thread.start()
    with _stopping_all(cancel, threads, events, emit):
        for _ in threads:
            while not done.acquire(timeout=0.1):
                _drain(events, emit)
        _drain(events, emit)
    return results


@contextlib.contextmanager
def _stopping_all(
    cancel: threading.Event,
    threads: list[threading.Thread],
    events: queue.Queue[object],
    emit: Observer[Any],
) -> Iterator[None]:
    try:
        yield
    except KeyboardInterrupt:
        cancel.set()
        while any(t.is_alive() for t in threads):
            try:
                for t in threads:
                    t.join(timeout=0.1)
                _drain(events, emit)
            except KeyboardInterrupt:
                continue
        raise


def _drain(events: queue.Queue[object], emit: Observer[Any]) -> None:
    while True:
        try:
            emit(events.get_nowait())
        except queue.Empty:
            return
