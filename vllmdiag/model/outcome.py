"""What a cell came to, kept apart from what it measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from vllmdiag.model.fingerprint import Fingerprint
from vllmdiag.model.hang import HangReport
from vllmdiag.model.root_cause import RootCause


class Outcome(str, Enum):
    """PASS / FAIL are results; TIMEOUT is a result the cell did not finish; ERROR means
    the cell gave nothing a verdict can use (the env could not be built, vllmdiag's own
    code failed, the workload took another shape: never "bug reproduced"); SKIPPED was
    not run."""

    PASS = "pass"
    FAIL = "fail"
    TIMEOUT = "timeout"
    ERROR = "error"
    SKIPPED = "skipped"

    @property
    def is_result(self) -> bool:
        return self in (Outcome.PASS, Outcome.FAIL, Outcome.TIMEOUT)


@dataclass(frozen=True)
class CellResult:
    """One finished cell, as journaled in its ``result.json``.

    ``reuse_key`` says what a resumed run may reuse this result for (the env as
    installed, the exact command, its environment, the workload, the arm, the repeat);
    ``fingerprint`` is what the run did, read from its log.
    """

    id: str
    arm: str
    workload: str
    repeat: int
    outcome: Outcome
    rc: int | None
    elapsed_s: float
    metrics: dict[str, float] = field(default_factory=dict)
    reuse_key: str = ""
    reason: str = ""
    leg: str = ""
    lock_hash: str = ""
    argv: tuple[str, ...] = ()
    root_cause: RootCause | None = None
    fingerprint: Fingerprint | None = None
    log: str = ""
    #: What vllmdiag could not read about the cell (a reader that broke on its log).
    notes: tuple[str, ...] = ()
    #: What makes its figures weak though it ran as asked (a timed region too short).
    warnings: tuple[str, ...] = ()
    #: The node that ran it, in a run across nodes ("" on this machine alone).
    node: str = ""
    #: Where a cell killed at its timeout hung (its processes' stacks, its log's silence).
    hang: HangReport | None = None
