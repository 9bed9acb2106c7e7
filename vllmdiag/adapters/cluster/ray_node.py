"""One Ray node as the cell runner sees it (a :class:`vllmdiag.spine.runner.executor.Node`):
calls to its :class:`~vllmdiag.adapters.cluster.node_runner.NodeRunner` actor, with the node's
death turned into :class:`~vllmdiag.spine.runner.executor.NodeLost`, and files copied from it
to this machine in bounded chunks."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vllmdiag.adapters.cluster.wire import LegOutcome, NodeInfo
from vllmdiag.errors import RunDirError, VllmdiagError
from vllmdiag.events import Observer
from vllmdiag.plan.workloads import BenchDialect
from vllmdiag.readers.hygiene import DoctorReport
from vllmdiag.services import proc
from vllmdiag.services.envs.cache import Env, EnvEvent
from vllmdiag.services.envs.spec import LegSpec
from vllmdiag.spine.journal import RunDir
from vllmdiag.spine.runner.executor import NodeLost

#: The most one call moves of a log or output file (memory stays bounded by it).
CHUNK = 4 * 1024 * 1024
#: How often a wait on a node checks that the node is still in the cluster (seconds).
_ALIVE_EVERY_S = 5.0


class RayNode:
    """A node of the cluster; ``build_lock`` is shared by nodes whose env caches are one
    directory (a shared filesystem), so each leg is built there once."""

    remote = True

    def __init__(
        self,
        ray: Any,
        actor: Any,
        info: NodeInfo,
        gpus: tuple[str, ...],
        build_lock: threading.Lock,
    ) -> None:
        self.ray = ray
        self.actor = actor
        self.info = info
        self.id = info.node_id
        self.label = f"{info.hostname}-{info.node_id[:8]}"
        self.gpus: tuple[str, ...] | None = gpus
        self.build_lock = build_lock

    def call(self, method: str, *args: Any, what: str = "", interruptible: bool = True) -> Any:
        """Call the runner and wait; the node's death raises :class:`NodeLost`. While an
        ``interruptible`` call waits, a cancel of this thread (see
        :func:`vllmdiag.services.proc.cancel_scope`) raises KeyboardInterrupt; a cell's calls are
        not, as its cancel is passed on to the node instead."""
        ref = getattr(self.actor, method).remote(*args)
        checked = time.monotonic()
        while True:
            try:
                ready, _ = self.ray.wait([ref], timeout=0.25)
                if ready:
                    return self.ray.get(ready[0])
            except self.ray.exceptions.RayActorError as exc:
                raise self.lost(what, exc) from None
            if interruptible and proc.cancel_requested():
                raise KeyboardInterrupt
            if time.monotonic() - checked > _ALIVE_EVERY_S:
                checked = time.monotonic()
                if not self.alive():
                    raise self.lost(what, None)

    def alive(self) -> bool:
        return any(n.get("NodeID") == self.id and n.get("Alive") for n in self.ray.nodes())

    def lost(self, what: str, exc: BaseException | None) -> NodeLost:
        reason = self.death_reason() or (str(exc).strip().splitlines() or ["it stopped"])[0]
        return NodeLost(self.id, f"node {self.label} died{' ' + what if what else ''}: {reason}")

    def death_reason(self) -> str:
        for n in self.ray.nodes():
            if n.get("NodeID") == self.id and not n.get("Alive"):
                return str(n.get("DeathReasonMessage") or "it left the cluster")
        return ""

    def ensure(self, spec: LegSpec, *, observer: Observer[EnvEvent], log: Path) -> Env:
        with self.build_lock:
            out: LegOutcome = self.call("ensure", spec, what=f"building leg {spec.name}")
        for event in out.events:
            observer(event)
        if out.log:
            self.fetch(out.log, log)
        if out.error is not None:
            raise out.error.error(self.label)
        assert out.env is not None
        return out.env

    def doctor(self, env: Env, run_env: Mapping[str, str]) -> DoctorReport:
        got = self.call("doctor", env.spec.key(), dict(run_env), what="checking its legs")
        if isinstance(got, DoctorReport):
            return got
        raise got.error(self.label)

    def dialect(self, env: Env, pythonpath: str) -> BenchDialect:
        found: BenchDialect = self.call("dialect", env.spec.key(), pythonpath, what="")
        return found

    def out_dir(self, run: RunDir, run_id: str, cell_id: str) -> Path:
        return Path(self.info.scratch) / run_id / "cells" / cell_id / "out"

    def base_environ(self) -> dict[str, str]:
        return dict(self.info.environ)

    def end_tagged(self, prefix: str, grace_s: float) -> tuple[int, ...]:
        ended: tuple[int, ...] = self.call("end_tagged", prefix, grace_s, what="")
        return ended

    def sees(self, path: Path) -> bool:
        try:
            here = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return False
        there: str = self.call("digest", str(path), what="")
        return there == here

    def fetch(self, remote: str, local: Path) -> None:
        """Copy a file the runner wrote to ``local``, chunk by chunk."""
        offset = 0
        try:
            local.parent.mkdir(parents=True, exist_ok=True)
            with open(local, "wb") as fh:
                while True:
                    chunk = self._read(remote, offset, local)
                    fh.write(chunk)
                    offset += len(chunk)
                    if len(chunk) < CHUNK:
                        return
        except OSError as exc:
            raise RunDirError(
                f"cannot write {local.name} copied from node {self.label}: {exc.strerror}",
                where=str(local),
                hint="free some space (or fix permissions) on the run directory's disk, "
                "then resume the run with --resume",
            ) from None

    def _read(self, remote: str, offset: int, local: Path) -> bytes:
        try:
            chunk: bytes = self.call("read", remote, offset, CHUNK)
        except self.ray.exceptions.RayTaskError as exc:  # the node could not read it
            first = (str(exc.cause if exc.cause else exc).strip().splitlines() or ["?"])[0]
            raise VllmdiagError(
                f"cannot read {remote} on node {self.label}: {first}", where=str(local)
            ) from None
        return chunk
