"""What a diff says in words: its warnings, and one paragraph that reconciles the gap.

The paragraph: the gap (the wall clock where a clock exists: the launcher's, or the
CPU's span of the traced engine steps; else the capture window), how GPU idle and busy
time split it and what share of it they account for, which families, phases and ops
moved, what the launch calls cost, and any events the readers refused.
"""

from __future__ import annotations

from vllmdiag.jobs.profile.diff import steptimes
from vllmdiag.jobs.profile.diff.values import Diff
from vllmdiag.readers.traces import phases
from vllmdiag.readers.traces.leg import LegProfile, WallClock

WORK_TOLERANCE = 0.02  # legs whose step or token counts differ more than this: warn


def _clock(source: WallClock | None) -> str:
    return source.value if source is not None else "none"


def _pct(x: float) -> str:
    return f"{x * 100:+.0f} %"


def _ms(us: float) -> str:
    return f"{us / 1000:+.2f} ms"


def _share(part: float, total: float | None) -> float | None:
    return part / total if total is not None and abs(total) > 1e-9 else None


def warnings(a: LegProfile, b: LegProfile) -> tuple[str, ...]:
    out = [*a.warnings, *b.warnings]
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
    if a.wall_source != b.wall_source:
        out.append(
            f"the legs' clocks differ ({a.name}: {_clock(a.wall_source)}, {b.name}: "
            f"{_clock(b.wall_source)}): the gap is the capture windows' instead"
        )
    for leg in (a, b):
        if leg.skipped:
            top = ", ".join(f"{r} ×{n}" for r, n in sorted(leg.skipped.items())[:4])
            out.append(f"{leg.name}: {leg.skipped_count} trace events refused ({top})")
    return tuple(out)


def paragraph(d: Diff) -> str:
    a, b = d.a, d.b
    parts = []
    if d.wall_delta_us is not None and a.wall_us:
        clock = "wall clock" if a.wall_source is WallClock.LAUNCHER else "traced step span (CPU)"
        what = f"{clock} {_ms(d.wall_delta_us)} ({_pct(d.wall_delta_us / a.wall_us)})"
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
    lead_row = steptimes.headline(d.step_bands)
    if lead_row is not None:
        parts.append(steptimes.sentence(lead_row, (a.name, b.name)))
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
    paired = [r for r in d.top if r.paired_by]
    if paired:
        parts.append(
            f"{len(paired)} kernel row(s) pair differently named kernels by the op that "
            f"launched them (largest: {paired[0].paired_by}, {_ms(paired[0].delta_us)})."
        )
    refused = a.skipped_count + b.skipped_count
    if refused:
        parts.append(f"{refused} trace events were refused and are not counted (see warnings).")
    return " ".join(parts)
