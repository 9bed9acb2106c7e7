"""Interval arithmetic over one capture's GPU activities: busy time, steps, ranges.

The activities are kept per device in typed arrays (see :mod:`timeline`); these
functions read them, never the events. Steps own the activities that start inside them;
user/NVTX ranges own the activities inside them; the innermost CPU range open at a
launch names the launch where no operator does.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vllmdiag.readers.traces import families, phases

MAX_RANGE_NAMES = 20
_STEP_PRIORITY = {
    "context_generation": 0,
    "detailed": 0,
    "new_cached": 0,
    "launcher": 1,
    "profiler_step": 2,
}
_WALK_BACK = 64  # ranges looked at, back from a launch, for the innermost open one


@dataclass(frozen=True)
class StepStat:
    name: str
    kind: str
    start_us: float
    dur_us: float
    gpu_us: float
    kernels: int
    output_tokens: int | None


class Activities:
    """One device's GPU activities: start, end, family, name index, correlation, link."""

    __slots__ = ("corr", "end", "fam", "link", "name", "start")

    def __init__(self) -> None:
        self.start = array("d")
        self.end = array("d")
        self.fam = array("B")
        self.name = array("I")
        self.corr = array("q")
        self.link = array("q")


def union(start: array[float], end: array[float]) -> tuple[float, float, float]:
    """(covered length, first start, last end) of a set of intervals."""
    n = len(start)
    if n == 0:
        return 0.0, 0.0, 0.0
    ordered = all(start[i] <= start[i + 1] for i in range(n - 1))
    order: range | list[int] = range(n) if ordered else sorted(range(n), key=start.__getitem__)
    total = 0.0
    cur_s = cur_e = None
    last = float("-inf")
    for i in order:
        s, e = start[i], end[i]
        last = max(last, e)
        if cur_e is None or s > cur_e:
            if cur_e is not None and cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None and cur_s is not None:
        total += cur_e - cur_s
    return total, start[order[0]], last


def chosen_steps(
    raw: Sequence[tuple[float, float, str]],
) -> list[tuple[float, float, str, phases.StepName]]:
    """The steps of the most specific spelling present, in time order."""
    parsed = [(s, e, n, phases.parse_step(n)) for s, e, n in raw]
    known = [(s, e, n, p) for s, e, n, p in parsed if p is not None]
    if not known:
        return []
    best = min(_STEP_PRIORITY[p.spelling] for _, _, _, p in known)
    return sorted(x for x in known if _STEP_PRIORITY[x[3].spelling] == best)


def steps(
    devices: Iterable[Activities],
    gpu_steps: Sequence[tuple[float, float, str]],
    cpu_steps: Sequence[tuple[float, float, str]],
) -> tuple[tuple[StepStat, ...], dict[str, dict[str, float]]]:
    """Steps with the GPU time each holds, and GPU time per (step kind, family).

    On the GPU timeline (``gpu_user_annotation``) a step owns the activities that start
    inside it; with only CPU ranges, a step owns what starts between its start and the
    next step's start (the GPU runs behind the CPU).
    """
    gpu = bool(gpu_steps)
    chosen = chosen_steps(gpu_steps if gpu else cpu_steps)
    if not chosen:
        return (), {}
    starts = [c[0] for c in chosen]
    bounds = [c[1] for c in chosen] if gpu else [*starts[1:], float("inf")]
    gpu_us = [0.0] * len(chosen)
    nk = [0] * len(chosen)
    fam_us: dict[str, dict[str, float]] = {}
    kinds = [c[3].kind for c in chosen]
    for d in devices:
        for i in range(len(d.start)):
            t = d.start[i]
            j = bisect_right(starts, t) - 1
            if j < 0 or t >= bounds[j]:
                continue
            dur = d.end[i] - t
            gpu_us[j] += dur
            nk[j] += 1
            per = fam_us.setdefault(kinds[j], {})
            fam = families.FAMILIES[d.fam[i]]
            per[fam] = per.get(fam, 0.0) + dur
    out = tuple(
        StepStat(n, p.kind, s, e - s, gpu_us[j], nk[j], p.output_tokens)
        for j, (s, e, n, p) in enumerate(chosen)
    )
    return out, fam_us


def cpu_span(cpu_steps: Sequence[tuple[float, float, str]]) -> float | None:
    """First step start to last step end on the CPU: the traced steps' wall clock."""
    chosen = chosen_steps(cpu_steps)
    if not chosen:
        return None
    return max(e for _, e, _, _ in chosen) - chosen[0][0]


def range_phases(
    devices: Sequence[Activities], user_ranges: Sequence[tuple[float, float, str, bool, int]]
) -> dict[str, tuple[int, float, int]]:
    """GPU time inside each user/NVTX range name, for traces without step names.

    GPU projections of the ranges are used where the trace has them; otherwise an
    activity belongs to a CPU range it starts inside (approximate: the GPU lags).
    Nested ranges each count the activities inside them.
    """
    have_gpu = any(g for _, _, _, g, _ in user_ranges)
    by_name: dict[str, list[tuple[float, float]]] = {}
    for s, e, n, g, _ in user_ranges:
        if g == have_gpu:
            by_name.setdefault(n, []).append((s, e))
    top = sorted(by_name, key=lambda n: -len(by_name[n]))[:MAX_RANGE_NAMES]
    out: dict[str, tuple[int, float, int]] = {}
    for name in top:
        spans = sorted(by_name[name])
        starts = [x[0] for x in spans]
        ends = [x[1] for x in spans]
        us, nk = 0.0, 0
        for d in devices:
            for i in range(len(d.start)):
                t = d.start[i]
                j = bisect_right(starts, t) - 1
                if j >= 0 and t < ends[j]:
                    us += d.end[i] - t
                    nk += 1
        out[name] = (len(spans), us, nk)
    return out


class RangeIndex:
    """The innermost CPU range open on a thread at a time."""

    def __init__(self, user_ranges: Iterable[tuple[float, float, str, bool, int]]) -> None:
        per: dict[int, list[tuple[float, float, str]]] = {}
        for s, e, n, g, tid in user_ranges:
            if not g:
                per.setdefault(tid, []).append((s, e, n))
        self._starts: dict[int, list[float]] = {}
        self._spans: dict[int, list[tuple[float, float, str]]] = {}
        for tid, spans in per.items():
            spans.sort()
            self._spans[tid] = spans
            self._starts[tid] = [s for s, _, _ in spans]

    def innermost(self, tid: int, ts: float) -> str | None:
        starts = self._starts.get(tid)
        if not starts:
            return None
        spans = self._spans[tid]
        j = bisect_right(starts, ts) - 1
        for k in range(j, max(-1, j - _WALK_BACK), -1):
            if spans[k][1] >= ts:
                return spans[k][2]
        return None
