"""Processes that died without a Python exception: the lines that say so.

A worker killed by the OOM killer, a segfault in a kernel, an NCCL watchdog that takes
the process down: no traceback of the dying process exists, only a line saying it died
(from the parent, from torch, from Python's faulthandler, from the shell or kernel).
That line is then the root cause, with the process it names and an empty type.

Strength decides what it beats (see ``rootcause``):
- ``strong``: a process died and the line says which (vLLM's executor, torch's NCCL
  watchdog, ``Fatal Python error``);
- ``signal``: a bare signal or OOM-kill notice (``Segmentation fault``, ``Killed``, torch
  elastic's ``failed (exitcode: -11)``), used when no exception and no strong line is in view;
- ``native``: a C++ library's own error line (``CUDA Error: .. at x.cpp:62``), no Python
  exception behind it: as a signal notice;
- ``follow-on``: a death that follows another failure (exit -15 is the parent's SIGTERM;
  ``Engine core proc ... died`` is also printed on a normal teardown);
- ``weak``: vLLM's ``EngineCore encountered a fatal error``, which introduces the
  traceback of the real error; the root cause only when that traceback is not in view.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from vllmdiag.readers.triage.lines import Line
from vllmdiag.readers.triage.origin import origin_of
from vllmdiag.readers.triage.traceback_model import Frame

_FRAME = re.compile(r'^File [“"](?P<file>[^"”]+)[”"], line (?P<line>\d+)')
_STACK_HEAD = re.compile(r"^(?:Current thread 0x[0-9a-f]+|Thread 0x[0-9a-f]+|Stack) \(most recent")
STACK_LINES = 40  # lines after a "Fatal Python error" that may hold its stack
#: torch elastic's report of a failed child: its rank (``rank      : 1 (local_rank: 1)``).
_ELASTIC_RANK = re.compile(r"^rank\s*: (?P<rank>\d+) \(local_rank: \d+\)$")


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    strength: str
    origin: str  # vllm, dependency:<pkg>, stack (faulthandler's frames), unknown
    process: Callable[[re.Match[str], str], str] = lambda m, p: p
    from_match: bool = False  # the message starts where the pattern (or its msg group) does


def _named(group: str) -> Callable[[re.Match[str], str], str]:
    return lambda m, p: m[group]


def _v0(m: re.Match[str], p: str) -> str:
    return f"{m['name']} pid={m['pid']}"


def _raylet(m: re.Match[str], p: str) -> str:
    return "raylet"


def _manager(m: re.Match[str], p: str) -> str:
    """The cluster manager a report is from (its own name for the process it ended is
    not in the line)."""
    text = m.group()
    if "heartbeats" in text:
        return p if p != "main" else "raylet"
    if "low on resource" in text:
        return "kubelet"
    return "slurmstepd"


RULES: tuple[_Rule, ...] = (
    _Rule(
        re.compile(r"Worker proc (?P<proc>[\w-]+) died unexpectedly"),
        "strong",
        "vllm",
        _named("proc"),
    ),
    _Rule(
        re.compile(r"Worker (?P<name>\w+) pid (?P<pid>\d+) died, exit code: -15\b"),
        "follow-on",
        "vllm",
        _v0,
    ),
    _Rule(
        re.compile(r"Worker (?P<name>\w+) pid (?P<pid>\d+) died, exit code"), "strong", "vllm", _v0
    ),
    _Rule(
        re.compile(r"Engine core proc (?P<proc>[\w-]+) died unexpectedly"),
        "follow-on",
        "vllm",
        _named("proc"),
    ),
    _Rule(re.compile(r"[Gg]ot fatal signal from worker processes"), "strong", "vllm"),
    # V0's engine client finding the engine's process gone (its health check logs the
    # RuntimeError's repr: ``RuntimeError('Engine process (pid 76) died.')``)
    _Rule(
        re.compile(r"Engine process \(pid (?P<pid>\d+)\) died\."),
        "strong",
        "unknown",
        lambda m, p: f"Engine process pid={m['pid']}",
        from_match=True,
    ),
    _Rule(
        re.compile(
            r"Watchdog caught collective operation timeout|watchdog thread "
            r"terminated with exception|Heartbeat monitor timed out|watchdog got "
            r"stuck"
        ),
        "strong",
        "dependency:torch",
    ),
    _Rule(re.compile(r"^Fatal Python error: \w"), "strong", "stack"),
    # Ray's memory monitor, in the raylet's own words (a paste may wrap the line after
    # "tasks /"): it killed workers for the node's host memory
    _Rule(
        re.compile(
            r"(?<!\d)[1-9]\d* Workers \(tasks /(?:$| ?actors\) killed due to memory pressure)"
        ),
        "strong",
        "unknown",
        _raylet,
        from_match=True,
    ),
    # a container's init could not start the command it was given (podman's catatonit,
    # tini, dumb-init): nothing ran
    _Rule(
        re.compile(
            r"failed to exec pid1: .+|\[FATAL tini \(\d+\)\] exec .+ failed: .+"
            r"|\[dumb-init\] .+: No such file or directory"
        ),
        "strong",
        "unknown",
        from_match=True,
    ),
    # cluster managers' own reports: Slurm ending a job or step (its OOM, its limits), a
    # Ray node that stopped answering, Kubernetes evicting a pod
    _Rule(
        re.compile(
            r"Detected \d+ oom[_-]kill events? in \S+"
            r"|\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+ DUE TO [A-Z ]+"
            r"|(?:The node with node id: .{0,200}?)?has been marked dead because the detector "
            r"has missed too many heartbeats"
            r"|The node was low on resource: [\w-]+"
        ),
        "strong",
        "unknown",
        _manager,
        from_match=True,
    ),
    # a deployment harness's report that the engine's container crashed (llm-d's
    # benchmark harness; kubelet's back-off): the pod is the process that died
    _Rule(
        re.compile(
            r"(?:❌ )?Crashed container in pod:? (?P<pod>[\w.-]+)"
            r"|Back-off restarting failed container \S+ in pod (?P<bpod>[\w.-]+)"
        ),
        "strong",
        "unknown",
        lambda m, p: m["pod"] or m["bpod"],
        from_match=True,
    ),
    # Ray's account of an actor's death pasted without the ActorDiedError that carried it
    # (the actor not named): the death, of a process the paste does not name
    _Rule(
        re.compile(r"^The actor is dead because (?!of an error raised in its creation task)"),
        "strong",
        "unknown",
    ),
    # an executor's report that a process it started is gone (vllm-omni's stage
    # executor: ``Rank 2 scheduler is dead. Please check if there are relevant logs.``)
    _Rule(re.compile(r"^Rank \d+ [\w-]+ is dead\b"), "strong", "unknown"),
    # a native library's own error report, printed from C++ without a Python exception
    # (vLLM's cumem allocator: ``CUDA Error: out of memory at .../cumem_allocator.cpp:62``)
    _Rule(
        re.compile(r"^(?:CUDA|HIP|NCCL|CUDA driver) [Ee]rror: .+ at \S+\.(?:c|cc|cpp|cu|cuh):\d+$"),
        "native",
        "unknown",
    ),
    _Rule(re.compile(r"EngineCore encountered a fatal error"), "weak", "vllm"),
    # RunPod's record that a serverless worker's process exited (``0s0n9esxgd0u45[error]
    # worker exited with exit code 136``): that worker, by its id, died
    _Rule(
        re.compile(
            r"^(?P<worker>[a-z0-9]{12,20})\[error\]\s*"
            r"(?P<msg>worker exited with exit code -?\d+)"
        ),
        "strong",
        "unknown",
        _named("worker"),
        from_match=True,
    ),
    # torch elastic's report of the child that failed first (``traceback : Signal 6
    # (SIGABRT) received by PID 20297``): that child died of the signal; its rank is on
    # the report's ``rank :`` line above
    _Rule(
        re.compile(r"Signal \d+ \(SIG[A-Z]+\) received by PID (?P<pid>\d+)"),
        "signal",
        "unknown",
        lambda m, p: f"pid={m['pid']}",
        from_match=True,
    ),
    # a shell's report that the command a script ran died of a signal (``start.sh: line
    # 18:  1669 Illegal instruction     (core dumped) python -m ..``): that process died
    _Rule(
        re.compile(
            r"^\S+: line \d+: +(?P<pid>\d+) (?P<signal>Illegal instruction|Segmentation fault"
            r"|Aborted|Killed|Bus error|Floating point exception)\b\s*(?:\(core dumped\)\s*)?"
            r"(?P<cmd>[\w./-]*)"
        ),
        "signal",
        "unknown",
        lambda m, p: f"{m['cmd'].rsplit('/', 1)[-1] or 'process'} pid={m['pid']}",
        from_match=True,
    ),
    _Rule(
        re.compile(
            r"Segmentation fault|Segfault encountered|\*\*\* SIG(?:SEGV|ABRT|BUS|FPE"
            r"|ILL) received|^Killed$|Killed process \d+|Out of memory: Kill"
            r"|oom-kill|OOMKilled|terminated by signal \d+|(?:terminated|killed) "
            r"(?:with|by) signal|\(core dumped\)|A worker died or was killed"
            r"|exit(?:ed with)? ?code:? -?(?:9|11|6|134|137|139)\b"
            r"|Signal \d+ \(SIG[A-Z]+\) received by PID \d+"
            r"|^srun: error: \S+: tasks? [\d,-]+: (?:Killed|Segmentation fault|Aborted)"
            r"|^(?:Illegal instruction|Bus error|Floating point exception)(?: \(core dumped\))?$"
            # the shell's "Segmentation fault (core dumped)" in a Chinese locale
            r"|^段错误(?: ?[(（]核心已转储[)）])?$"
        ),
        "signal",
        "unknown",
    ),
)


@dataclass
class Death:
    line: int
    process: str
    message: str
    strength: str
    origin: str
    package: str | None
    frames: list[Frame] = field(default_factory=list)  # faulthandler's, innermost first
    survived: bool = False  # a handler's signal notice after which its process logged on


def _message_start(m: re.Match[str]) -> slice:
    """Where a death line's message starts: its ``msg`` group (a platform's record past its
    worker id), its ``signal`` group (a shell's report past the pid), else the match."""
    for group in ("msg", "signal"):
        if group in m.groupdict():
            return slice(m.start(group), None)
    return slice(m.start(), None)


def classify(line: Line) -> Death | None:
    """The death a line reports, or None."""
    text = line.text.strip()
    if not text or len(text) > 2000:
        return None
    for rule in RULES:
        m = rule.pattern.search(text)
        if m is None:
            continue
        origin, _, package = rule.origin.partition(":")
        return Death(
            line.number,
            rule.process(m, line.process),
            text[_message_start(m)] if rule.from_match else text,
            rule.strength,
            origin,
            package or ("vllm" if origin == "vllm" else None),
        )
    return None


class DeathWatch:
    """Collects death lines, and the Python stack faulthandler prints under a fatal one."""

    def __init__(self) -> None:
        self.deaths: list[Death] = []
        self._stack: tuple[Death, str, int] | None = None  # (death, process, until line)
        self._counts: dict[str, int] = {}
        self._last = 0
        self._watch_until = 0  # a handler's signal notice: the lines after it tell
        self._rank: str | None = None  # torch elastic's report: the failed child's rank

    @property
    def collecting(self) -> bool:
        return self._stack is not None or self._watch_until > self._last

    def feed(self, line: Line) -> None:
        self._last = line.number
        if self._stack is not None and self._stacked(line):
            return
        death = classify(line)
        if death is None:
            if line.level in ("INFO", "DEBUG", "WARNING"):
                self._alive(line)
            rank = _ELASTIC_RANK.match(line.text.strip())
            if rank:
                self._rank = rank["rank"]
            return
        if self._rank is not None and death.process.startswith("pid="):
            death.process = f"rank{self._rank} {death.process}"
        n = self._counts.get(death.strength, 0)
        if n < 64:  # the first ones of each kind are what matters; keep memory flat
            self._counts[death.strength] = n + 1
            self.deaths.append(death)
            if death.origin == "stack":
                self._stack = (death, line.process, line.number + STACK_LINES)
            if "Caught signal" in death.message:
                self._watch_until = line.number + STACK_LINES

    def _alive(self, line: Line) -> None:
        """A normal log record: a signal handler's notice of the same process before it
        was survived (UCX prints ``Caught signal 11`` for one of its threads, and the
        process may log on: then that notice is not its death)."""
        for d in self.deaths:
            if d.survived or d.process != line.process or "Caught signal" not in d.message:
                continue
            d.survived = True
            self._watch_until = 0

    def _stacked(self, line: Line) -> bool:
        """True when ``line`` belongs to the open fatal error's stack."""
        assert self._stack is not None
        death, process, until = self._stack
        if line.number > until:
            self._done()
            return False
        if line.process != process:
            return False
        text = line.text.strip()
        m = _FRAME.match(text)
        if m and len(death.frames) < 8:
            death.frames.append(Frame(m["file"], int(m["line"]), ""))
            return True
        if not text or _STACK_HEAD.match(text) or m:
            return True
        self._done()
        return False

    def _done(self) -> None:
        if self._stack is not None:
            death = self._stack[0]
            # faulthandler prints the innermost frame first; origin_of wants it last
            death.origin, death.package = origin_of(list(reversed(death.frames)))
            self._stack = None

    def finish(self) -> list[Death]:
        self._done()
        return self.deaths
