"""Where an engine's start-up time went, from the timestamps in its log.

vLLM stamps every log line to the second (``INFO 12-01 10:48:40 [core.py:117] ...``) and
names the steps of its start-up in fixed sentences: the engine config, the start and end
of weight loading, torch.compile, the KV cache, CUDA-graph capture, the memory report and
the final "init engine ... took". Between two of those milestones lies one phase. The time
before the first log line (interpreter and vLLM imports) is known only when vllmdiag
started the process: its log header carries the start time.

Slow starts after an upgrade are among the commonest vLLM complaints, and their cause is
usually one phase: a FlashInfer JIT build in the sampler warm-up, a cold torch.compile
cache, weights on a slow disk. :func:`dominant` names that phase.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

from vllmdiag.model.startup import Dominant, Phase, PhaseDelta, StartupDiff, StartupTimeline
from vllmdiag.readers.triage.lines import strip_ansi

#: Written by the cell runner as the first line of a cell's log.
HEADER = "# vllmdiag: cell started"
HEADER_RE = re.compile(r"^# vllmdiag: cell started (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)")
#: Written by the cell runner when it kills a cell at its timeout.
TIMEOUT_LINE = "# vllmdiag: cell timed out"
TIMEOUT_RE = re.compile(
    r"^# vllmdiag: cell timed out (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?) local time"
    r"(?: after (?P<timeout>[\d.]+) s)?(?:; log silent (?P<silent>[\d.]+) s)?"
)
_TOOK_RE = re.compile(r"took ([\d.]+) ?s(?:econds)?\b")

#: vLLM's logger prefix (level, MM-DD HH:MM:SS), after an optional process tag.
STAMP_RE = re.compile(
    r"\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) +(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b"
)


@dataclass(frozen=True)
class Milestone:
    key: str
    pattern: re.Pattern[str]
    phase: str  # the name of the phase this milestone ends
    first: bool = True  # the first line that matches counts (else the last)


MILESTONES: tuple[Milestone, ...] = (
    Milestone(
        "config",
        re.compile(r"non-default args:|Resolved architecture:"),
        "config (arguments, model config)",
    ),
    Milestone("engine", re.compile(r"Initializing a V1 LLM engine"), "engine process start"),
    Milestone(
        "weights_start",
        re.compile(r"Starting to load model|Loading model from scratch"),
        "device and distributed setup",
    ),
    Milestone(
        "weights_loaded",
        re.compile(r"Model loading took|Loading weights took"),
        "weights",
        first=False,
    ),
    Milestone(
        "compiled",
        re.compile(r"torch\.compile took|torch\.compile and initial profiling|Dynamo bytecode"),
        "torch.compile",
        first=False,
    ),
    Milestone(
        "kv_cache",
        re.compile(r"GPU KV cache size|Available KV cache memory"),
        "memory profiling and KV cache",
        first=False,
    ),
    Milestone(
        "kernel_warmup",
        re.compile(r"\[(?:kernel_warmup|cutedsl_warmup)\.py:\d+\]|Compile and warming up model"),
        "kernel warm-up",
        first=False,
    ),
    Milestone("graphs", re.compile(r"Graph capturing finished"), "CUDA graphs"),
    Milestone("memory_report", re.compile(r"Free memory on device \("), "memory report"),
    Milestone(
        "jit_monitor",
        re.compile(r"Kernel JIT monitor activated"),
        "sampler warm-up (kernel JIT builds)",
    ),
    Milestone(
        "ready",
        re.compile(r"init engine \(profile, create kv cache, warmup model\) took"),
        "final warm-up",
    ),
)
MARKER_WORDS = (
    rb"Initializing a V1 LLM engine|Resolved architecture|Starting to load model"
    rb"|Loading model from scratch|kernel_warmup\.py|cutedsl_warmup\.py|Compile and warming up"
    rb"|Model loading took|Loading weights took|torch\.compile|Dynamo bytecode"
    rb"|KV cache size|KV cache memory|Capturing CUDA graphs|Capturing cudagraphs"
    rb"|Graph capturing finished|Free memory on device|Kernel JIT monitor|init engine \("
)
#: A phase that takes more than this share of the start-up is called dominant.
DOMINANT_SHARE = 0.4


class TimelineBuilder:
    """Fed line by line (any order of calls within one log, first to last)."""

    def __init__(self) -> None:
        self.process_start: datetime | None = None
        self.first_log: datetime | None = None
        self.stamps: dict[str, datetime] = {}
        self.reported_init_s: float | None = None
        self.took: dict[str, float] = {}
        self.killed: datetime | None = None
        self.silent_s: float | None = None
        self._year: int | None = None
        self._last: datetime | None = None

    def header(self, raw: str) -> None:
        m = HEADER_RE.match(raw)
        if m and self.process_start is None:
            self.process_start = datetime.fromisoformat(m.group(1))
            self._year = self.process_start.year
            return
        k = TIMEOUT_RE.match(raw)
        if k:
            self.killed = datetime.fromisoformat(k.group(1)).replace(microsecond=0)
            self.silent_s = float(k.group("silent")) if k.group("silent") else None

    def line(self, raw: str) -> None:
        if raw.startswith("#"):
            self.header(raw)
            return
        m = STAMP_RE.search(strip_ansi(raw) if "\x1b" in raw else raw)
        if m is None:
            return
        when = self._when(*(int(g) for g in m.groups()))
        if when is None:
            return
        if self.first_log is None:
            self.first_log = when
        text = m.string[m.end() :]
        for ms in MILESTONES:
            if ms.pattern.search(text) and (not ms.first or ms.key not in self.stamps):
                self.stamps[ms.key] = when
                took = _TOOK_RE.search(text)
                if took:
                    self.took[ms.key] = float(took.group(1))
                if ms.key == "ready":
                    took = re.search(r"took ([\d.]+) s", text)
                    if took:
                        self.reported_init_s = float(took.group(1))

    def _when(self, month: int, day: int, hh: int, mm: int, ss: int) -> datetime | None:
        year = self._year or datetime.now().year
        try:
            when = datetime(year, month, day, hh, mm, ss)
        except ValueError:
            return None
        if self._last is not None and (self._last - when).days > 300:
            when = when.replace(year=year + 1)  # the log ran over New Year
            self._year = year + 1
        self._last = when
        return when

    def build(self) -> StartupTimeline | None:
        if not self.stamps:
            return None
        points: list[tuple[str, str, datetime]] = []
        if self.process_start is not None:
            # vLLM stamps whole seconds: the start is truncated alike, so no phase is
            # negative for the fraction of a second the header has.
            points.append(("process_start", "", self.process_start.replace(microsecond=0)))
        if self.first_log is not None:
            points.append(("first_log", "imports (before vLLM's first log line)", self.first_log))
        for ms in MILESTONES:
            if ms.key in self.stamps:
                points.append((ms.key, ms.phase, self.stamps[ms.key]))
        points.sort(key=lambda p: p[2])
        ready = "ready" in self.stamps
        killed = self.killed is not None and not ready and self.killed >= points[-1][2]
        if killed and self.killed is not None:
            last = next((ms.phase for ms in MILESTONES if ms.key == points[-1][0]), None)
            wait = f"after {last}: until the kill" if last else "until the kill"
            points.append(("killed", wait, self.killed))
        phases = []
        for (a_key, _, a_when), (b_key, name, b_when) in pairwise(points):
            if a_key == "process_start" and b_key != "first_log":
                name = "imports (before vLLM's first log line)"
            seconds = (b_when - a_when).total_seconds()
            phases.append(Phase(name, a_key, b_key, seconds, self.took.get(b_key)))
        total = (points[-1][2] - points[0][2]).total_seconds()
        return StartupTimeline(
            tuple(phases),
            total,
            ready,
            self.process_start is not None,
            self.reported_init_s,
            killed=killed,
            silent_s=self.silent_s if killed else None,
        )


def timeline(lines: Iterable[str]) -> StartupTimeline | None:
    """The start-up timeline of a log given as lines (tests, short logs)."""
    builder = TimelineBuilder()
    for raw in lines:
        builder.line(raw)
    return builder.build()


def diff(a: StartupTimeline, b: StartupTimeline) -> list[PhaseDelta]:
    """Phase by phase (phases of one name summed), biggest move first."""
    names: list[str] = []
    for p in (*a.phases, *b.phases):
        if p.name not in names:
            names.append(p.name)

    def total(t: StartupTimeline, name: str) -> float | None:
        hits = [p.seconds for p in t.phases if p.name == name]
        return sum(hits) if hits else None

    out = [PhaseDelta.of(n, total(a, n), total(b, n)) for n in names]
    return sorted(out, key=lambda d: -abs(d.delta_s))


#: Which hygiene checks explain a slow phase (check names from ``vllmdiag.readers.hygiene``).
_FLASHINFER_JIT = ("flashinfer-jit-cache", "flashinfer-cubin", "flashinfer-mismatch")
#: Which hygiene checks explain a slow phase, by the milestone that ends the phase (check
#: codes from ``vllmdiag.readers.hygiene``): FlashInfer kernels missing their prebuilt cubins are
#: JIT-built in the warm-ups.
EXPLAINED_BY: dict[str, tuple[str, ...]] = {
    "jit_monitor": _FLASHINFER_JIT,
    "kernel_warmup": _FLASHINFER_JIT,
    "ready": _FLASHINFER_JIT,
}


def dominant(t: StartupTimeline, findings: Sequence[tuple[str, str]] = ()) -> Dominant | None:
    """The phase that takes more than :data:`DOMINANT_SHARE` of the start-up, with the
    hygiene finding (``(check, message)`` pairs) that explains it, if any."""
    if t.total_s <= 0 or not t.phases:
        return None
    top = max(t.phases, key=lambda p: p.seconds)
    share = top.seconds / t.total_s
    if share <= DOMINANT_SHARE:
        return None
    wanted = EXPLAINED_BY.get(top.end, ())
    why = next((msg for check, msg in findings if check in wanted), None)
    return Dominant(top, share, why)


def startup_diff(a: StartupTimeline | None, b: StartupTimeline | None) -> StartupDiff | None:
    """Both timelines' totals and their phases, biggest move first (None without both)."""
    if a is None or b is None:
        return None
    return StartupDiff(a.total_s, b.total_s, tuple(diff(a, b)))
