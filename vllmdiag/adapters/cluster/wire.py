"""What the head and a node's runner hand each other: plain frozen values (Ray pickles
them), errors included, so an error raised on a node is raised on the head with its
message, place and hint intact."""

from __future__ import annotations

from dataclasses import dataclass

from vllmdiag.errors import EnvError, PinNotHeld, ProcessError, VllmdiagError
from vllmdiag.services.envs.cache import Env, EnvEvent
from vllmdiag.spine.runner.executor import CellRun

#: The kind of error a node's runner reports for a cell it ended because the node left
#: the cluster.
LOST = "NodeLost"


@dataclass(frozen=True)
class ErrorInfo:
    """A vllmdiag error on a node (``kind``: its class name), to raise again here."""

    kind: str
    message: str
    where: str | None
    hint: str | None
    problems: tuple[str, ...] = ()

    @classmethod
    def of(cls, exc: VllmdiagError) -> ErrorInfo:
        problems = exc.problems if isinstance(exc, PinNotHeld) else ()
        return cls(type(exc).__name__, exc.message, exc.where, exc.hint, problems)

    def error(self, node: str) -> VllmdiagError:
        """The error again, its place naming the node."""
        where = f"node {node}: {self.where}" if self.where else f"node {node}"
        if self.kind == "PinNotHeld":
            return PinNotHeld(self.problems, where=where, hint=self.hint)
        if self.kind == "EnvError":
            return EnvError(self.message, where=where, hint=self.hint)
        if self.kind in ("ProcessError", "VllmdiagError", "RunDirError", "ConfigError"):
            return ProcessError(self.message, where=where, hint=self.hint)
        return VllmdiagError(
            f"vllmdiag failed on the node: {self.kind}: {self.message}",
            where=where,
            hint="please report it to vllmdiag",
        )


@dataclass(frozen=True)
class NodeInfo:
    """A node as its runner sees it: ``visible_gpus`` is its ``CUDA_VISIBLE_DEVICES``
    (None: unset); ``environ`` what a cell there inherits."""

    node_id: str
    hostname: str
    pid: int
    version: str
    scratch: str
    cache: str
    visible_gpus: str | None
    environ: dict[str, str]


@dataclass(frozen=True)
class LegOutcome:
    """A leg on a node: its env or why not, what the cache reported, and its build log."""

    env: Env | None
    error: ErrorInfo | None
    events: tuple[EnvEvent, ...]
    log: str


@dataclass(frozen=True)
class Poll:
    """A cell on a node: the next piece of its log (``size``: the log's length now),
    its pid once it has one, and its outcome (or error) once it has ended."""

    chunk: bytes
    size: int
    pid: int | None
    start_ticks: int | None
    done: CellRun | None
    error: ErrorInfo | None

    @property
    def finished(self) -> bool:
        return self.done is not None or self.error is not None
