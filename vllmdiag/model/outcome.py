"""What a cell came to, kept apart from what it measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Outcome(str, Enum):
    """PASS / FAIL are results; TIMEOUT is a result the cell did not finish; ERROR means
    vllmdiag or the env could not set the cell up (never "bug reproduced"); SKIPPED was
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
    """One finished cell, as journaled in its ``result.json``."""

    id: str
    arm: str
    workload: str
    repeat: int
    outcome: Outcome
    rc: int | None
    elapsed_s: float
    metrics: dict[str, float] = field(default_factory=dict)
    fingerprint: str = ""
    reason: str = ""
    leg: str = ""
    lock_hash: str = ""
    argv: tuple[str, ...] = ()
    root_cause: dict[str, Any] | None = None
    run_fingerprint: dict[str, Any] | None = None
    log_path: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "arm": self.arm,
            "workload": self.workload,
            "repeat": self.repeat,
            "outcome": self.outcome.value,
            "rc": self.rc,
            "elapsed_s": round(self.elapsed_s, 3),
            "metrics": self.metrics,
            "fingerprint": self.fingerprint,
            "reason": self.reason,
            "leg": self.leg,
            "lock_hash": self.lock_hash,
            "argv": list(self.argv),
            "root_cause": self.root_cause,
            "run_fingerprint": self.run_fingerprint,
            "log": self.log_path,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CellResult:
        return cls(
            id=d["id"],
            arm=d["arm"],
            workload=d["workload"],
            repeat=int(d["repeat"]),
            outcome=Outcome(d["outcome"]),
            rc=d.get("rc"),
            elapsed_s=float(d.get("elapsed_s", 0.0)),
            metrics={k: float(v) for k, v in (d.get("metrics") or {}).items()},
            fingerprint=d.get("fingerprint", ""),
            reason=d.get("reason", ""),
            leg=d.get("leg", ""),
            lock_hash=d.get("lock_hash", ""),
            argv=tuple(d.get("argv", ())),
            root_cause=d.get("root_cause"),
            run_fingerprint=d.get("run_fingerprint"),
            log_path=d.get("log", ""),
        )
