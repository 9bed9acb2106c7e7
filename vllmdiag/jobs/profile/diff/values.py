"""What a diff of two legs holds: frozen values, apart from the arithmetic that fills them
(:mod:`time_diff`) and the words that reconcile them (:mod:`reconcile`)."""

from __future__ import annotations

from dataclasses import dataclass

from vllmdiag.jobs.profile.diff import steptimes
from vllmdiag.jobs.profile.diff.pairing import KernelRow, OpRow
from vllmdiag.readers.traces.leg import LegProfile


@dataclass(frozen=True)
class FamilyRow:
    family: str
    a_us: float
    b_us: float
    delta_us: float
    share: float | None
    a_ops: tuple[str, ...] = ()  # the ops that launched most of the family's time on A
    b_ops: tuple[str, ...] = ()


@dataclass(frozen=True)
class PhaseRow:
    kind: str
    a_steps: int
    b_steps: int
    a_us_per_step: float | None
    b_us_per_step: float | None
    change: float | None  # relative change of GPU time per step
    families: tuple[tuple[str, float], ...]  # (family, delta µs per step), largest first


@dataclass(frozen=True)
class Diff:
    a: LegProfile
    b: LegProfile
    delta_us: float
    busy_delta_us: float
    idle_delta_us: float
    window_delta_us: float
    launch_delta_us: float
    families: tuple[FamilyRow, ...]
    top: tuple[KernelRow, ...]
    phases: tuple[PhaseRow, ...]
    per_step: tuple[float | None, float | None]
    per_token: tuple[float | None, float | None]
    wall_delta_us: float | None
    explained: float | None
    warnings: tuple[str, ...]
    reconciliation: str
    ops: tuple[OpRow, ...] = ()
    #: Step times of both sides judged against their step-to-step variation.
    step_bands: tuple[steptimes.StepBand, ...] = ()
