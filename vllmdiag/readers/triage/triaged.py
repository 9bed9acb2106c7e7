"""What triage returns: frozen values (their JSON comes from :mod:`vllmdiag.codec`). The
root cause is the model's :class:`~vllmdiag.model.root_cause.RootCause`, the one type a
cell's result keeps too."""

from __future__ import annotations

from dataclasses import dataclass

from vllmdiag.model.outcome import Outcome
from vllmdiag.model.root_cause import EvidenceKind as EvidenceKind
from vllmdiag.model.root_cause import Origin
from vllmdiag.model.root_cause import RootCause as RootCause
from vllmdiag.readers.triage.deaths import Death
from vllmdiag.readers.triage.lines import Line
from vllmdiag.readers.triage.relays import Relay


@dataclass(frozen=True)
class Skipped:
    """A traceback triage did not take as the root cause, and why."""

    type: str
    message: str
    process: str
    line: int
    why: str


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
    outcome: Outcome | None = None  # a vllmdiag cell's recorded outcome

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASS


@dataclass(frozen=True)
class Group:
    """Logs whose root causes are the same failure (same catalogue entry or signature)."""

    signature: str
    known: str | None
    members: tuple[str, ...]
    next_step: str | None
    meaning: str | None = None
    signatures: tuple[str, ...] = ()
    #: whose fault it is, as the group's first log reads it
    origin: Origin = Origin.UNKNOWN
    package: str | None = None
    why: str = ""


@dataclass(frozen=True)
class Unattributed:
    """A log (or cell) in which no root cause was found, and what was found instead."""

    member: str
    note: str


@dataclass(frozen=True)
class Attribution:
    groups: tuple[Group, ...]
    unattributed: tuple[Unattributed, ...] = ()
    logs: tuple[LogTriage, ...] = ()
    passed: tuple[str, ...] = ()  # cells of a run directory whose outcome is pass


@dataclass(frozen=True)
class Evidence:
    """What the reader saw besides tracebacks."""

    vllm_version: str | None = None
    ends_mid_line: bool = False
    lines: int = 0
    finished: str | None = None  # the benchmark's result line, when the run printed one
    #: the log's last non-blank lines (normalised): where it stops, and a paste of an
    #: error's words alone
    ending: tuple[Line, ...] = ()
    cli_error: tuple[int, str, str] | None = None  # (line, message, program): argparse
    relay: Relay | None = None  # the first error a process around vLLM relays
    deaths: tuple[Death, ...] = ()  # lines saying a process died, in log order
    #: directories whose files are vllmdiag's own besides its package (the run directory)
    tool_dirs: tuple[str, ...] = ()
    wrapper: str | None = None  # a program the log shows building vLLM's command line
    #: the line where vLLM's progress bar showed every prompt done (the work was over)
    completed_at: int | None = None
    #: a framework driving vLLM that the log shows (a frame of its code in any traceback)
    framework: str | None = None
    #: the log links a vLLM pull request or commit (the change an argument error is about)
    vllm_change: bool = False
    #: a vLLM platform plugin the log says failed to load (``Failed to load plugin ascend``)
    failed_plugin: str | None = None
    #: what pip listed as the conflict under its refusal, and whose it is (rule, why)
    pip_causes: str = ""
    pip_blame: tuple[str, str] | None = None

    @property
    def last_line(self) -> str:
        """The log's last non-blank line (normalised): where a log that just stops
        stopped."""
        return self.ending[-1].text.strip() if self.ending else ""
