"""A failure's root cause: the one type triage produces and a cell's result keeps."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal


class Origin(str, Enum):
    """Whose fault a failure is, who must act (the rules: ``readers/triage/blame.py``):
    ``vllm``; ``dependency`` (a library vLLM uses, named by ``package``); ``caller``
    (the framework driving vLLM, named by ``package``, or the workload's own script);
    ``config`` (the user's settings); ``environment`` (the machine and what is installed
    on it); ``tool`` (vllmdiag's own code: the cell is an ERROR, never a verdict);
    ``unknown`` (the evidence is not in view). ``user`` is only read back: a result
    recorded before origin said whose fault it was named the place the error was raised
    instead, and ``user`` was the workload's own code."""

    VLLM = "vllm"
    DEPENDENCY = "dependency"
    CALLER = "caller"
    CONFIG = "config"
    ENVIRONMENT = "environment"
    TOOL = "tool"
    UNKNOWN = "unknown"
    USER = "user"


#: How the root cause was read: a traceback with its header in view, an exception line
#: without it, a line saying a process died, a wrapper's quote of the child's error, a
#: command line the program refused; for a cell killed at its timeout with no exception
#: in view, its stacks dumped (``hang-dump``) or not (``timeout``).
EvidenceKind = Literal[
    "traceback",
    "exception-line",
    "death-line",
    "wrapper-message",
    "cli-error",
    "hang-dump",
    "timeout",
]


@dataclass(frozen=True)
class RootCause:
    """The original exception in the process that failed first (or the line saying it
    died), as triage read it from a log; a failing cell's result keeps it.

    ``type``: the exception's type (empty or None where none is in view: a death line, a
    hang); ``known``, ``next_step``, ``advice``, ``meaning``: the catalogue entry it
    matched; ``origin``, ``package``, ``why``: whose fault it is (:class:`Origin`) and
    why, in one line; ``raised_in``: where it was raised (a package's name, or
    ``script`` for the workload's own file), which need not be whose fault it is;
    ``evidence``: how it was read (:data:`EvidenceKind`); ``lines``: the traceback's
    first line and its exception line; ``frames``: the innermost frames, ``file:line in
    func``; ``reason``: how triage chose it. A cell whose log shows no root cause keeps
    one whose ``type`` is None and whose ``message`` says why; a reader that broke on
    the log leaves ``reader_error``.
    """

    type: str | None = None
    message: str | None = None
    process: str | None = None
    signature: str | None = None
    known: str | None = None
    next_step: str | None = None
    advice: str | None = None
    origin: Origin = Origin.UNKNOWN
    package: str | None = None
    why: str | None = None
    raised_in: str | None = None
    evidence: EvidenceKind | None = None
    frames: tuple[str, ...] = ()
    lines: tuple[int, int] | None = None
    reader_error: str | None = None
    meaning: str | None = None
    reason: str = ""

    @property
    def is_tool_error(self) -> bool:
        """The failure lies in vllmdiag's own code: the cell is an ERROR, not a FAIL."""
        return self.origin is Origin.TOOL

    @property
    def key(self) -> str:
        """What groups cells failing alike: the signature, else the message."""
        return self.signature or self.message or ""
