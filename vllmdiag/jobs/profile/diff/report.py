"""What a profile diff writes and prints: frozen values, encoded by :mod:`vllmdiag.codec`.

:class:`GpuDiff` is ``diff.json`` and ``profile diff --json`` (a GPU comparison, with the
py-spy frames beside it when both sides have some); :class:`CpuDiff` a CPU-only (py-spy)
comparison. Both read back into the same values (``codec.load(GpuDiff, data)``). Built
from a :class:`~vllmdiag.jobs.profile.diff.time_diff.Diff` (whose sides keep every kernel) by
:func:`gpu_report`; a number that is not finite is None, never NaN in a JSON file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from vllmdiag.jobs.profile.diff.pairing import KernelRow, OpRow
from vllmdiag.jobs.profile.diff.steptimes import StepBand
from vllmdiag.jobs.profile.diff.time_diff import Diff, FamilyRow, PhaseRow, kernel_table
from vllmdiag.readers.traces import families
from vllmdiag.readers.traces.leg import LegProfile, WallClock
from vllmdiag.readers.traces.pyspy import FrameRow


@dataclass(frozen=True)
class TopKernel:
    """One of a side's own kernels with the most GPU time."""

    name: str  # normalised: named by its function
    signature: str
    family: str
    count: int
    graph_count: int
    total_us: float
    mean_us: float | None
    op: str | None  # the op that launched most of its time


@dataclass(frozen=True)
class LegSummary:
    """One side of a diff, as numbers."""

    name: str
    kernels: int
    graph_kernels: int
    memops: int
    gpu_time_us: float
    gpu_busy_us: float
    gpu_idle_us: float
    window_us: float
    wall_us: float | None
    wall_source: WallClock | None
    launch_us: float
    launches: int
    cpu_ops: int
    devices: int
    steps: int
    output_tokens: int | None
    skipped_events: int
    skipped: dict[str, int]
    sources: tuple[str, ...]
    top_kernels: tuple[TopKernel, ...]


@dataclass(frozen=True)
class GpuDiff:
    """Where the GPU time went between two sides
    (see :mod:`vllmdiag.jobs.profile.diff.time_diff`)."""

    legs: tuple[LegSummary, LegSummary]
    delta_us: float
    busy_delta_us: float
    idle_delta_us: float
    window_delta_us: float
    launch_delta_us: float
    wall_delta_us: float | None
    explained: float | None
    per_step_us: tuple[float | None, float | None]
    per_token_us: tuple[float | None, float | None]
    families: tuple[FamilyRow, ...]
    top: tuple[KernelRow, ...]
    ops: tuple[OpRow, ...]
    phases: tuple[PhaseRow, ...]
    warnings: tuple[str, ...]
    reconciliation: str
    pyspy: tuple[FrameRow, ...] = ()
    files: dict[str, Path] = field(default_factory=dict)
    #: Step times judged against step-to-step variation (:mod:`..steptimes`).
    step_bands: tuple[StepBand, ...] = ()

    @property
    def names(self) -> tuple[str, str]:
        return self.legs[0].name, self.legs[1].name


@dataclass(frozen=True)
class CpuDiff:
    """A CPU-only comparison: the py-spy frames whose sample share moved most."""

    names: tuple[str, str]
    pyspy: tuple[FrameRow, ...]
    files: dict[str, Path] = field(default_factory=dict)


DiffReport = GpuDiff | CpuDiff


def _finite(x: float | None) -> float | None:
    return x if x is None or math.isfinite(x) else None


def finite(value: Any) -> Any:
    """A frozen row with every non-finite float field made None (the rows' optional
    numbers; their required ones are sums of finite, checked durations)."""
    changes = {
        f.name: None
        for f in fields(value)
        if isinstance(getattr(value, f.name), float) and not math.isfinite(getattr(value, f.name))
    }
    return replace(value, **changes) if changes else value


def leg_summary(leg: LegProfile) -> LegSummary:
    top = tuple(
        TopKernel(
            name=families.normalise(k.name),
            signature=k.name,
            family=k.family,
            count=k.count,
            graph_count=k.graph_count,
            total_us=k.total_us,
            mean_us=k.total_us / k.count if k.count else None,
            op=k.ops[0][0] if k.ops else None,
        )
        for k in kernel_table(leg)
    )
    return LegSummary(
        name=leg.name,
        kernels=leg.kernel_count,
        graph_kernels=leg.graph_kernel_count,
        memops=leg.memop_count,
        gpu_time_us=leg.gpu_time_us,
        gpu_busy_us=leg.gpu_busy_us,
        gpu_idle_us=leg.gpu_idle_us,
        window_us=leg.window_us,
        wall_us=_finite(leg.wall_us),
        wall_source=leg.wall_source,
        launch_us=leg.launch_us,
        launches=leg.launches,
        cpu_ops=leg.cpu_op_count,
        devices=leg.devices,
        steps=leg.step_count,
        output_tokens=leg.output_tokens,
        skipped_events=leg.skipped_count,
        skipped=dict(sorted(leg.skipped.items())),
        sources=leg.sources,
        top_kernels=top,
    )


def gpu_report(
    d: Diff, frames: tuple[FrameRow, ...] = (), files: dict[str, Path] | None = None
) -> GpuDiff:
    """``d`` as the value ``diff.json`` holds."""
    return GpuDiff(
        legs=(leg_summary(d.a), leg_summary(d.b)),
        delta_us=d.delta_us,
        busy_delta_us=d.busy_delta_us,
        idle_delta_us=d.idle_delta_us,
        window_delta_us=d.window_delta_us,
        launch_delta_us=d.launch_delta_us,
        wall_delta_us=_finite(d.wall_delta_us),
        explained=_finite(d.explained),
        per_step_us=(_finite(d.per_step[0]), _finite(d.per_step[1])),
        per_token_us=(_finite(d.per_token[0]), _finite(d.per_token[1])),
        families=tuple(finite(r) for r in d.families),
        top=tuple(finite(r) for r in d.top),
        ops=tuple(finite(r) for r in d.ops),
        phases=tuple(finite(r) for r in d.phases),
        warnings=d.warnings,
        reconciliation=d.reconciliation,
        pyspy=frames,
        files=dict(files or {}),
        step_bands=tuple(finite(r) for r in d.step_bands),
    )
