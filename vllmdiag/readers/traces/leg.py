"""One leg's profile: every trace file of a capture (engine core, each TP worker) merged.

A leg is given as a trace file or a directory: a vllmdiag capture directory
(``meta.json`` from the torch launcher, traces, ``nsys`` SQLite exports, ``py-spy``
output) or vLLM's own ``torch_profiler_dir``. Zero GPU kernels in a leg is a failed
capture, never a zero.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from itertools import pairwise
from pathlib import Path
from typing import Any

from vllmdiag.errors import VllmdiagError
from vllmdiag.readers.traces.timeline import KernelStat, StepStat, TraceSummary

#: Written by vllmdiag into a capture directory (the capture's record), never a trace.
CAPTURE_RECORD = "capture.json"
TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite")
PYSPY_SUFFIXES = (".folded", ".raw", ".pyspy.txt")
_NOT_TRACES = {
    "meta.json",
    "argv.json",
    "profile.json",
    "result.json",
    "summary.json",
    "timing.json",
}


class CaptureError(VllmdiagError):
    """A capture that holds no GPU work: it failed, whatever files it left."""


class WallClock(Enum):
    """What measured a side's wall clock of the profiled window."""

    LAUNCHER = "launcher clock"
    TRACED_STEPS = "traced CPU steps"


@dataclass(frozen=True)
class LegProfile:
    name: str
    sources: tuple[str, ...]
    kernels: dict[str, KernelStat]
    kernel_count: int
    memop_count: int
    graph_kernel_count: int
    gpu_time_us: float
    gpu_busy_us: float
    gpu_idle_us: float
    window_us: float
    devices: int
    runtime: dict[str, tuple[int, float]]
    ranges: dict[str, tuple[int, float]]
    cpu_ops: dict[str, tuple[int, float]]
    steps: tuple[StepStat, ...]
    step_count: int
    step_families: dict[str, dict[str, float]]
    step_ranks: int = 1
    range_gpu: dict[str, tuple[int, float, int]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    #: events refused while reading, by reason, over all of the leg's files
    skipped: dict[str, int] = field(default_factory=dict)
    #: the traced CPU span of the engine steps, summed over processes (no launcher clock)
    step_span_us: float | None = None
    warnings: tuple[str, ...] = ()
    #: (kind, µs) from each step's start to the next one's on the same process
    step_periods: tuple[tuple[str, float], ...] = ()

    @property
    def launch_us(self) -> float:
        """CPU time spent in kernel/graph launch calls."""
        return sum(t for n, (_, t) in self.runtime.items() if "Launch" in n)

    @property
    def launches(self) -> int:
        return sum(c for n, (c, _) in self.runtime.items() if "Launch" in n)

    @property
    def cpu_op_count(self) -> int:
        """Operator events on the CPU (nested ones included): the dispatch work."""
        return sum(c for c, _ in self.cpu_ops.values())

    @property
    def runtime_us(self) -> float:
        return sum(t for _, t in self.runtime.values())

    @property
    def output_tokens(self) -> int | None:
        """Tokens the captured window produced: from the launcher, else the steps' names."""
        tokens = self.meta.get("tokens")
        if isinstance(tokens, int) and tokens > 0:
            return tokens
        known = [s.output_tokens for s in self.steps]
        if known and all(t is not None for t in known):
            return sum(t for t in known if t is not None) // max(1, self.step_ranks)
        return None

    @property
    def launcher_wall_us(self) -> float | None:
        """The torch launcher's wall clock of the profiled window, where there is one."""
        wall = self.meta.get("wall_s_profiled")
        if isinstance(wall, (int, float)) and not isinstance(wall, bool) and 0 <= wall < 1e9:
            return float(wall) * 1e6
        return None

    @property
    def wall_us(self) -> float | None:
        """The wall clock of the profiled window: the launcher's, else the CPU's span of
        the traced engine steps (vLLM's own profiler), else None."""
        wall = self.launcher_wall_us
        return wall if wall is not None else self.step_span_us

    @property
    def wall_source(self) -> WallClock | None:
        """What :attr:`wall_us` measured."""
        if self.launcher_wall_us is not None:
            return WallClock.LAUNCHER
        return WallClock.TRACED_STEPS if self.step_span_us is not None else None

    @property
    def skipped_count(self) -> int:
        return sum(self.skipped.values())


def trace_files(path: Path) -> list[Path]:
    """The trace files a leg path stands for (a file, or the traces in a directory)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise VllmdiagError(
            f"no such trace file or directory: {path}",
            hint="pass a capture directory (RUN/SIDE/torch), a trace file, or a profile "
            "run directory alone",
        )
    found = sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and p.name.endswith(TRACE_SUFFIXES)
        and p.name not in _NOT_TRACES
        and _looks_like_trace(p)
    )
    return found


#: How far into a JSON file its ``traceEvents`` key is looked for: Kineto writes it after
#: the schema version, the device properties and the distributed info.
_SNIFF_BYTES = 1 << 16


def _looks_like_trace(path: Path) -> bool:
    """A JSON file is a trace only if it says so near its start; a benchmark's own JSON
    (``vllm bench throughput --output-json`` writes one into the capture directory) is
    not. SQLite exports and files that cannot be read are left to the reader to judge."""
    if path.name.endswith(".sqlite"):
        return True
    try:
        if path.name.endswith(".gz"):
            import gzip

            with gzip.open(path, "rb") as fh:
                head = fh.read(_SNIFF_BYTES)
        else:
            with open(path, "rb") as fh:
                head = fh.read(_SNIFF_BYTES)
    except (OSError, EOFError):
        return True  # damaged: the reader says so, with the file's name
    return b'"traceEvents"' in head


def read_meta(path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The launcher's ``meta.json`` beside a capture, and a warning when it is unreadable
    (the traces still are: only the launcher's wall clock and token count are lost)."""
    meta_file = path / "meta.json" if path.is_dir() else path.parent / "meta.json"
    if not meta_file.is_file():
        return {}, ()
    try:
        data = json.loads(meta_file.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as exc:
        pos = f":{exc.lineno}:{exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        return {}, (f"{meta_file}{pos}: meta.json is not JSON ({exc}); its wall clock and "
                    "token count are not used",)  # fmt: skip
    if not isinstance(data, dict):
        return {}, (f"{meta_file}: meta.json is not a JSON object; not used",)
    return data, ()


def _merge_ops(
    a: tuple[tuple[str, int, float], ...], b: tuple[tuple[str, int, float], ...]
) -> tuple[tuple[str, int, float], ...]:
    acc: dict[str, tuple[int, float]] = {}
    for op, c, us in (*a, *b):
        c0, us0 = acc.get(op, (0, 0.0))
        acc[op] = (c0 + c, us0 + us)
    return tuple(sorted(((op, c, us) for op, (c, us) in acc.items()), key=lambda r: (-r[2], r[0])))


def merge(
    name: str,
    parts: Iterable[TraceSummary],
    meta: dict[str, Any],
    warnings: tuple[str, ...] = (),
) -> LegProfile:
    parts = list(parts)
    skipped: dict[str, int] = {}
    kernels: dict[str, KernelStat] = {}
    runtime: dict[str, tuple[int, float]] = {}
    ranges: dict[str, tuple[int, float]] = {}
    cpu_ops: dict[str, tuple[int, float]] = {}
    step_fams: dict[str, dict[str, float]] = {}
    range_gpu: dict[str, tuple[int, float, int]] = {}
    for p in parts:
        for k, (c, us, nk) in p.range_gpu.items():
            c0, us0, nk0 = range_gpu.get(k, (0, 0.0, 0))
            range_gpu[k] = (c0 + c, us0 + us, nk0 + nk)
        for k, s in p.kernels.items():
            old = kernels.get(k)
            kernels[k] = (
                s
                if old is None
                else KernelStat(
                    s.name,
                    s.family,
                    s.category,
                    old.count + s.count,
                    old.total_us + s.total_us,
                    old.graph_count + s.graph_count,
                    _merge_ops(old.ops, s.ops),
                )
            )
        for reason, n in p.skipped.items():
            skipped[reason] = skipped.get(reason, 0) + n
        for src, dst in ((p.runtime, runtime), (p.ranges, ranges), (p.cpu_ops, cpu_ops)):
            for k, (c, t) in src.items():
                c0, t0 = dst.get(k, (0, 0.0))
                dst[k] = (c0 + c, t0 + t)
        for kind, fams in p.step_families.items():
            into = step_fams.setdefault(kind, {})
            for f, us in fams.items():
                into[f] = into.get(f, 0.0) + us
    leg = LegProfile(
        name=name,
        sources=tuple(p.source for p in parts),
        kernels=kernels,
        kernel_count=sum(p.kernel_count for p in parts),
        memop_count=sum(p.memop_count for p in parts),
        graph_kernel_count=sum(p.graph_kernel_count for p in parts),
        gpu_time_us=sum(p.gpu_time_us for p in parts),
        gpu_busy_us=sum(p.gpu_busy_us for p in parts),
        gpu_idle_us=sum(p.gpu_idle_us for p in parts),
        window_us=sum(p.window_us for p in parts),
        devices=sum(p.devices for p in parts),
        runtime=runtime,
        ranges=ranges,
        cpu_ops=cpu_ops,
        steps=tuple(s for p in parts for s in p.steps),
        step_count=max((len(p.steps) for p in parts), default=0),
        step_families=step_fams,
        step_ranks=max(1, sum(1 for p in parts if p.steps)),
        range_gpu=range_gpu,
        meta=meta,
        skipped=skipped,
        step_span_us=_step_span(parts),
        warnings=warnings,
        step_periods=tuple(x for p in parts for x in _periods(p.steps)),
    )
    if leg.kernel_count == 0:
        raise CaptureError(
            f"leg {name!r}: zero GPU kernels in {len(parts)} trace file(s) "
            f"({', '.join(Path(s).name for s in leg.sources[:4])}): the capture failed",
            hint="a CPU-only run, a profiler that never started (CUDA activity off), or "
            "a capture window outside the GPU work; re-capture with CUDA profiling on",
        )
    return leg


def load(path: Path, name: str | None = None) -> LegProfile:
    """Read every trace of a leg (streaming each) into one :class:`LegProfile`."""
    from vllmdiag.readers.traces import kineto, nsys

    files = trace_files(path)
    if not files:
        raise CaptureError(
            f"no trace files under {path}",
            hint="expected *.json, *.json.gz (torch profiler) or *.sqlite (nsys export)",
        )
    parts = [nsys.read(f) if f.name.endswith(".sqlite") else kineto.read(f) for f in files]
    meta, warnings = read_meta(path)
    return merge(name or path.name, parts, meta, warnings)


def _periods(steps: Iterable[StepStat]) -> list[tuple[str, float]]:
    """(kind, start-to-next-start µs) of one process's steps, labelled by the first."""
    ordered = sorted(steps, key=lambda s: s.start_us)
    return [(s.kind, n.start_us - s.start_us) for s, n in pairwise(ordered)]


def _step_span(parts: list[TraceSummary]) -> float | None:
    """The CPU span of the traced steps, summed over the processes with GPU work; None
    unless every one of them has step ranges (a partial sum would not be a clock)."""
    busy = [p for p in parts if p.kernel_count]
    spans = [p.step_span_us for p in busy]
    if not busy or any(s is None for s in spans):
        return None
    return sum(s for s in spans if s is not None)
