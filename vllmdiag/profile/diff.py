"""Where the time went between two legs: pure arithmetic over two :class:`LegProfile`.

``delta_us`` is B's GPU time (kernels, copies, sets, graph replays included) minus A's;
family and kernel rows carry their share of it, largest change (either way) first.
Kernels match by (family, normalised name). Idle time and launch (CPU) time are
reported beside it, and the window delta (busy + idle) is what the wall clock saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllmdiag.profile import families, phases
from vllmdiag.profile.leg import LegProfile
from vllmdiag.profile.timeline import KernelStat

WORK_TOLERANCE = 0.02  # legs whose step or token counts differ more than this: warn


@dataclass(frozen=True)
class FamilyRow:
    family: str
    a_us: float
    b_us: float
    delta_us: float
    share: float | None


@dataclass(frozen=True)
class KernelRow:
    name: str
    family: str
    a_us: float
    b_us: float
    a_count: int
    b_count: int
    delta_us: float
    share: float | None
    a_mean_us: float | None = None
    b_mean_us: float | None = None


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

    def to_json(self) -> dict[str, Any]:
        return {
            "legs": [_leg_json(x) for x in (self.a, self.b)],
            "delta_us": self.delta_us,
            "busy_delta_us": self.busy_delta_us,
            "idle_delta_us": self.idle_delta_us,
            "window_delta_us": self.window_delta_us,
            "launch_delta_us": self.launch_delta_us,
            "wall_delta_us": self.wall_delta_us,
            "explained": self.explained,
            "per_step_us": list(self.per_step),
            "per_token_us": list(self.per_token),
            "families": [r.__dict__ for r in self.families],
            "top": [r.__dict__ for r in self.top],
            "phases": [
                {**r.__dict__, "families": [list(f) for f in r.families]} for r in self.phases
            ],
            "warnings": list(self.warnings),
            "reconciliation": self.reconciliation,
        }


def _leg_json(leg: LegProfile) -> dict[str, Any]:
    return {
        "name": leg.name,
        "kernels": leg.kernel_count,
        "graph_kernels": leg.graph_kernel_count,
        "memops": leg.memop_count,
        "gpu_time_us": leg.gpu_time_us,
        "gpu_busy_us": leg.gpu_busy_us,
        "gpu_idle_us": leg.gpu_idle_us,
        "window_us": leg.window_us,
        "launch_us": leg.launch_us,
        "launches": leg.launches,
        "cpu_ops": leg.cpu_op_count,
        "devices": leg.devices,
        "steps": leg.step_count,
        "output_tokens": leg.output_tokens,
        "wall_us": leg.wall_us,
        "sources": list(leg.sources),
        "top_kernels": [
            {
                "name": k.name,
                "family": k.family,
                "count": k.count,
                "total_us": k.total_us,
                "mean_us": k.total_us / k.count if k.count else None,
            }
            for k in kernel_table(leg)
        ],
    }


def kernel_table(leg: LegProfile, n: int = 20) -> list[KernelStat]:
    """A leg's own kernel table: the ``n`` kernels with the most GPU time."""
    return sorted(leg.kernels.values(), key=lambda k: (-k.total_us, k.name))[:n]


def _share(part: float, total: float) -> float | None:
    return part / total if abs(total) > 1e-9 else None


def _by_key(leg: LegProfile) -> dict[tuple[str, str], tuple[float, int]]:
    out: dict[tuple[str, str], tuple[float, int]] = {}
    for k in leg.kernels.values():
        key = (k.family, families.normalise(k.name))
        t, c = out.get(key, (0.0, 0))
        out[key] = (t + k.total_us, c + k.count)
    return out


def _pct(x: float) -> str:
    return f"{x * 100:+.0f} %"


def _ms(us: float) -> str:
    return f"{us / 1000:+.2f} ms"


def diff(a: LegProfile, b: LegProfile, top: int = 15) -> Diff:
    delta = b.gpu_time_us - a.gpu_time_us
    fam_rows = []
    for fam in families.FAMILIES:
        fa = sum(k.total_us for k in a.kernels.values() if k.family == fam)
        fb = sum(k.total_us for k in b.kernels.values() if k.family == fam)
        if fa or fb:
            fam_rows.append(FamilyRow(fam, fa, fb, fb - fa, _share(fb - fa, delta)))
    fam_rows.sort(key=lambda r: (-abs(r.delta_us), r.family))
    ka, kb = _by_key(a), _by_key(b)
    rows = []
    for key in ka.keys() | kb.keys():
        (ta, ca), (tb, cb) = ka.get(key, (0.0, 0)), kb.get(key, (0.0, 0))
        rows.append(
            KernelRow(
                key[1],
                key[0],
                ta,
                tb,
                ca,
                cb,
                tb - ta,
                _share(tb - ta, delta),
                ta / ca if ca else None,
                tb / cb if cb else None,
            )
        )
    rows.sort(key=lambda r: (-abs(r.delta_us), r.name))
    warnings = _warnings(a, b)
    per_step = (_per(a.gpu_time_us, a.step_count), _per(b.gpu_time_us, b.step_count))
    per_token = (_per(a.gpu_time_us, a.output_tokens), _per(b.gpu_time_us, b.output_tokens))
    wall = b.wall_us - a.wall_us if a.wall_us is not None and b.wall_us is not None else None
    window_delta = b.window_us - a.window_us
    gap = wall if wall is not None else window_delta
    busy_delta = b.gpu_busy_us - a.gpu_busy_us
    idle_delta = b.gpu_idle_us - a.gpu_idle_us
    explained = _share(busy_delta + idle_delta, gap)
    result = Diff(
        a=a,
        b=b,
        delta_us=delta,
        busy_delta_us=busy_delta,
        idle_delta_us=idle_delta,
        window_delta_us=window_delta,
        launch_delta_us=b.launch_us - a.launch_us,
        families=tuple(fam_rows),
        top=tuple(rows[:top]),
        phases=_phases(a, b),
        per_step=per_step,
        per_token=per_token,
        wall_delta_us=wall,
        explained=explained,
        warnings=tuple(warnings),
        reconciliation="",
    )
    return _with_paragraph(result)


def _per(total: float, n: int | None) -> float | None:
    return total / n if n else None


def _warnings(a: LegProfile, b: LegProfile) -> list[str]:
    out = []
    if a.step_count != b.step_count:
        out.append(
            f"the legs ran different numbers of steps ({a.name}: {a.step_count}, "
            f"{b.name}: {b.step_count}): compare the per-step figures, not the totals"
        )
    ta, tb = a.output_tokens, b.output_tokens
    if ta and tb and abs(ta - tb) > WORK_TOLERANCE * max(ta, tb):
        out.append(
            f"the legs produced different numbers of tokens ({ta} vs {tb}): "
            "compare the per-token figures"
        )
    if bool(a.graph_kernel_count) != bool(b.graph_kernel_count):
        ran = a if a.graph_kernel_count else b
        out.append(
            f"only {ran.name} replayed CUDA graphs ({ran.graph_kernel_count} kernels from "
            "graphs): launch overhead and idle time differ by construction"
        )
    if a.devices != b.devices:
        out.append(f"the legs traced different GPU counts ({a.devices} vs {b.devices})")
    return out


def _phases(a: LegProfile, b: LegProfile) -> tuple[PhaseRow, ...]:
    rows = []
    for kind in phases.KINDS:
        sa = [s for s in a.steps if s.kind == kind]
        sb = [s for s in b.steps if s.kind == kind]
        if not sa and not sb:
            continue
        na, nb = len(sa) // a.step_ranks, len(sb) // b.step_ranks
        pa = sum(s.gpu_us for s in sa) / na if na else None
        pb = sum(s.gpu_us for s in sb) / nb if nb else None
        change = (pb - pa) / pa if pa and pb is not None else None
        fa, fb = a.step_families.get(kind, {}), b.step_families.get(kind, {})
        fam = []
        if na and nb:
            for f in fa.keys() | fb.keys():
                fam.append((f, fb.get(f, 0.0) / nb - fa.get(f, 0.0) / na))
        fam.sort(key=lambda x: -abs(x[1]))
        rows.append(PhaseRow(kind, na, nb, pa, pb, change, tuple(fam)))
    if not a.steps and not b.steps:  # no step names: phases are the user/NVTX ranges
        for name in sorted(a.range_gpu.keys() | b.range_gpu.keys()):
            ca, ua, _ = a.range_gpu.get(name, (0, 0.0, 0))
            cb, ub, _ = b.range_gpu.get(name, (0, 0.0, 0))
            pa = ua / ca if ca else None
            pb = ub / cb if cb else None
            change = (pb - pa) / pa if pa and pb is not None else None
            rows.append(PhaseRow(f"range {name}", ca, cb, pa, pb, change, ()))
    return tuple(rows)


def _with_paragraph(d: Diff) -> Diff:
    """One paragraph: the gap, how idle and busy time split it, which families and
    phases moved, and what the launch calls cost."""
    from dataclasses import replace

    a, b = d.a, d.b
    parts = []
    if d.wall_delta_us is not None and a.wall_us:
        what = f"wall clock {_ms(d.wall_delta_us)} ({_pct(d.wall_delta_us / a.wall_us)})"
    else:
        rel = _share(d.window_delta_us, a.window_us)
        what = f"capture window {_ms(d.window_delta_us)}" + (
            f" ({_pct(rel)})" if rel is not None else ""
        )
    head = (
        f"{b.name} vs {a.name}: {what}; GPU idle {_ms(d.idle_delta_us)}, "
        f"GPU busy {_ms(d.busy_delta_us)}"
    )
    if d.explained is not None:
        head += f", together {d.explained * 100:.0f} % of that gap"
    parts.append(head + ".")
    rel = _share(d.delta_us, a.gpu_time_us)
    kern = f"GPU kernel time {_ms(d.delta_us)}" + (f" ({_pct(rel)})" if rel is not None else "")
    lead = [r for r in d.families if abs(r.delta_us) >= 0.01 * max(1.0, abs(d.delta_us))][:3]
    if lead:
        kern += ": " + ", ".join(f"{r.family} {_ms(r.delta_us)}" for r in lead)
    parts.append(kern + ".")
    for p in d.phases:
        if p.change is not None and p.kind != phases.STEP and p.families:
            f0, v0 = p.families[0]
            parts.append(
                f"{p.kind} steps {_pct(p.change)} GPU time per step (largest: {f0} "
                f"{_ms(v0)} per step)."
            )
    parts.append(
        f"CPU time in launch calls {_ms(d.launch_delta_us)} "
        f"({a.launches} vs {b.launches} launches; {a.cpu_op_count} vs {b.cpu_op_count} "
        "CPU operator events)."
    )
    k = d.top[0] if d.top else None
    if k is not None and k.share is not None:
        parts.append(
            f"Largest single kernel change: {k.name} ({k.family}) {_ms(k.delta_us)}, "
            f"{k.share * 100:.0f} % of the kernel-time delta."
        )
    return replace(d, reconciliation=" ".join(parts))
