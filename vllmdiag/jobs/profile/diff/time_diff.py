"""Where the time went between two legs: pure arithmetic over two :class:`LegProfile`.

``delta_us`` is B's GPU time (kernels, copies, sets, graph replays included) minus A's;
family, kernel and op rows carry their share of it, largest change (either way) first.
Kernels match by (family, normalised name), and where names differ by the op that
launched them (:mod:`pairing`). Idle time and launch (CPU) time are reported beside it,
and the window delta (busy + idle) is reconciled against the wall clock
(:mod:`reconcile`).
"""

from __future__ import annotations

from dataclasses import replace

from vllmdiag.jobs.profile.diff import reconcile, steptimes
from vllmdiag.jobs.profile.diff.pairing import KernelRow, OpRow, kernel_rows, label, op_rows
from vllmdiag.jobs.profile.diff.values import Diff, FamilyRow, PhaseRow
from vllmdiag.readers.traces import families, phases
from vllmdiag.readers.traces.leg import LegProfile
from vllmdiag.readers.traces.timeline import KernelStat

__all__ = ["Diff", "FamilyRow", "KernelRow", "OpRow", "PhaseRow", "diff", "kernel_table"]


def kernel_table(leg: LegProfile, n: int = 20) -> list[KernelStat]:
    """A leg's own kernel table: the ``n`` kernels with the most GPU time."""
    return sorted(leg.kernels.values(), key=lambda k: (-k.total_us, k.name))[:n]


def _share(part: float, total: float) -> float | None:
    return part / total if abs(total) > 1e-9 else None


def _per(total: float, n: int | None) -> float | None:
    return total / n if n else None


def _family_ops(leg: LegProfile, fam: str, n: int = 3) -> tuple[str, ...]:
    us: dict[str, float] = {}
    for k in leg.kernels.values():
        if k.family == fam:
            for op, _, t in k.ops:
                key = label(op)
                us[key] = us.get(key, 0.0) + t
    return tuple(sorted(us, key=lambda o: (-us[o], o))[:n])


def diff(a: LegProfile, b: LegProfile, top: int = 15, steps_hint: int = 32) -> Diff:
    delta = b.gpu_time_us - a.gpu_time_us
    fam_rows = []
    for fam in families.FAMILIES:
        fa = sum(k.total_us for k in a.kernels.values() if k.family == fam)
        fb = sum(k.total_us for k in b.kernels.values() if k.family == fam)
        if fa or fb:
            fam_rows.append(FamilyRow(fam, fa, fb, fb - fa, _share(fb - fa, delta),
                                      _family_ops(a, fam), _family_ops(b, fam)))  # fmt: skip
    fam_rows.sort(key=lambda r: (-abs(r.delta_us), r.family))
    rows = kernel_rows(a.kernels.values(), b.kernels.values(), delta)
    same_clock = a.wall_source == b.wall_source  # never a launcher clock minus a traced span
    wall = (
        b.wall_us - a.wall_us
        if same_clock and a.wall_us is not None and b.wall_us is not None
        else None
    )
    window_delta = b.window_us - a.window_us
    gap = wall if wall is not None else window_delta
    busy_delta = b.gpu_busy_us - a.gpu_busy_us
    idle_delta = b.gpu_idle_us - a.gpu_idle_us
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
        per_step=(_per(a.gpu_time_us, a.step_count), _per(b.gpu_time_us, b.step_count)),
        per_token=(_per(a.gpu_time_us, a.output_tokens), _per(b.gpu_time_us, b.output_tokens)),
        wall_delta_us=wall,
        explained=_share(busy_delta + idle_delta, gap),
        warnings=reconcile.warnings(a, b),
        reconciliation="",
        ops=tuple(op_rows(a.kernels.values(), b.kernels.values(), delta)[:top]),
        step_bands=steptimes.bands(a, b, steps_hint),
    )
    return replace(result, reconciliation=reconcile.paragraph(result))


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
