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
from pathlib import Path
from typing import Any

from vllmdiag.errors import VllmdiagError
from vllmdiag.profile.timeline import KernelStat, StepStat, TraceSummary

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
    def wall_us(self) -> float | None:
        """The launcher's wall clock of the profiled window, where there is one."""
        wall = self.meta.get("wall_s_profiled")
        return float(wall) * 1e6 if isinstance(wall, (int, float)) else None


def trace_files(path: Path) -> list[Path]:
    """The trace files a leg path stands for (a file, or the traces in a directory)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise VllmdiagError(
            f"no such trace file or directory: {path}",
            hint="pass a run directory of 'vllmdiag profile RECIPE --legs A B' or "
            "'vllmdiag profile capture', or a trace file",
        )
    found = sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and p.name.endswith(TRACE_SUFFIXES) and p.name not in _NOT_TRACES
    )
    return found


def read_meta(path: Path) -> dict[str, Any]:
    meta_file = path / "meta.json" if path.is_dir() else path.parent / "meta.json"
    if meta_file.is_file():
        data = json.loads(meta_file.read_text())
        if isinstance(data, dict):
            return data
    return {}


def merge(name: str, parts: Iterable[TraceSummary], meta: dict[str, Any]) -> LegProfile:
    parts = list(parts)
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
                )
            )
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
    from vllmdiag.profile import kineto, nsys

    files = trace_files(path)
    if not files:
        raise CaptureError(
            f"no trace files under {path}",
            hint="expected *.json, *.json.gz (torch profiler) or *.sqlite (nsys export)",
        )
    parts = [nsys.read(f) if f.name.endswith(".sqlite") else kineto.read(f) for f in files]
    return merge(name or path.name, parts, read_meta(path))
