"""What triage returns: frozen values with a ``to_json()``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from vllmdiag.triage.deaths import Death
from vllmdiag.triage.origin import Origin

#: How the root cause was read: a traceback with its header in view, an exception line
#: without it, a line saying a process died, a wrapper's quote of the child's error, or a
#: command line the program refused.
EvidenceKind = Literal["traceback", "exception-line", "death-line", "wrapper-message", "cli-error"]


@dataclass(frozen=True)
class RootCause:
    """The original exception in the process that failed first (or the line saying it
    died). ``origin`` says whose failure it is: ``tool`` (vllmdiag's own code: an error,
    never a verdict), ``vllm``, ``dependency`` (``package`` names it), ``user`` or
    ``unknown``."""

    type: str
    message: str
    process: str
    signature: str
    known: str | None
    next_step: str | None
    lines: tuple[int, int]  # the traceback's first line and its exception line
    meaning: str | None = None
    reason: str = ""
    frames: tuple[str, ...] = ()  # the innermost frames, "file:line in func"
    evidence: EvidenceKind = "traceback"
    origin: Origin = "unknown"
    package: str | None = None  # the package the origin frame is in (vllm, torch, ...)
    advice: str | None = None  # the catalogue's advice besides its next step

    @property
    def is_tool_error(self) -> bool:
        """The failure lies in vllmdiag's own code: the cell is an ERROR, not a FAIL."""
        return self.origin == "tool"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "message": self.message,
            "process": self.process,
            "signature": self.signature,
            "known": self.known,
            "next_step": self.next_step,
            "meaning": self.meaning,
            "lines": list(self.lines),
            "reason": self.reason,
            "frames": list(self.frames),
            "evidence": self.evidence,
            "origin": self.origin,
            "package": self.package,
            "advice": self.advice,
        }


@dataclass(frozen=True)
class Skipped:
    """A traceback triage did not take as the root cause, and why."""

    type: str
    message: str
    process: str
    line: int
    why: str

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "message": self.message,
            "process": self.process,
            "line": self.line,
            "why": self.why,
        }


@dataclass(frozen=True)
class LogTriage:
    path: str
    root_cause: RootCause | None
    wrappers: tuple[Skipped, ...]
    tracebacks: int
    note: str | None = None
    benign: tuple[Skipped, ...] = ()
    vllm_version: str | None = None
    truncated: bool = False
    lines: int = 0
    outcome: str | None = None  # a vllmdiag cell's recorded outcome (pass, fail, ...)

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "root_cause": self.root_cause.to_json() if self.root_cause else None,
            "wrappers": [w.to_json() for w in self.wrappers],
            "tracebacks": self.tracebacks,
            "benign": [b.to_json() for b in self.benign],
            "note": self.note,
            "vllm_version": self.vllm_version,
            "truncated": self.truncated,
            "lines": self.lines,
            "outcome": self.outcome,
        }


@dataclass(frozen=True)
class Group:
    """Logs whose root causes are the same failure (same catalogue entry or signature)."""

    signature: str
    known: str | None
    members: tuple[str, ...]
    next_step: str | None
    meaning: str | None = None
    signatures: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "known": self.known,
            "members": list(self.members),
            "next_step": self.next_step,
            "meaning": self.meaning,
            "signatures": list(self.signatures),
        }


@dataclass(frozen=True)
class Attribution:
    groups: tuple[Group, ...]
    unattributed: tuple[tuple[str, str], ...] = ()  # (member, note): no root cause found
    logs: tuple[LogTriage, ...] = ()
    passed: tuple[str, ...] = ()  # cells of a run directory whose outcome is pass

    def to_json(self) -> dict[str, Any]:
        return {
            "groups": [g.to_json() for g in self.groups],
            "unattributed": [{"member": m, "note": n} for m, n in self.unattributed],
            "passed": list(self.passed),
        }


@dataclass(frozen=True)
class Evidence:
    """What the reader saw besides tracebacks."""

    vllm_version: str | None = None
    ends_mid_line: bool = False
    lines: int = 0
    finished: str | None = None  # the benchmark's result line, when the run printed one
    last_line: str = ""  # the log's last non-blank line (normalised)
    cli_error: tuple[int, str, str] | None = None  # (line, message, program): argparse
    deaths: tuple[Death, ...] = ()  # lines saying a process died, in log order
