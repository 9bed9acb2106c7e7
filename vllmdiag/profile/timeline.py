"""One capture's GPU timeline, reduced to aggregates as its events stream past.

Readers (Kineto JSON, nsys SQLite) feed a :class:`Timeline` one activity at a time;
:meth:`Timeline.finish` turns it into a frozen :class:`TraceSummary`. Per GPU activity
only a few numbers are kept, in typed arrays (about 40 bytes each), never the event.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from vllmdiag.profile import families, phases

_FAMILY_INDEX = {f: i for i, f in enumerate(families.FAMILIES)}
MAX_RANGES = 200_000  # user ranges kept for phase attribution (the rest only counted)
MAX_RANGE_NAMES = 20
_STEP_PRIORITY = {"context_generation": 0, "new_cached": 0, "launcher": 1, "profiler_step": 2}


@dataclass(frozen=True)
class KernelStat:
    name: str
    family: str
    category: str
    count: int
    total_us: float
    graph_count: int


@dataclass(frozen=True)
class StepStat:
    name: str
    kind: str
    start_us: float
    dur_us: float
    gpu_us: float
    kernels: int
    output_tokens: int | None


@dataclass(frozen=True)
class TraceSummary:
    """Aggregates of one trace file (one process)."""

    source: str
    kernels: dict[str, KernelStat]
    kernel_count: int
    memop_count: int
    graph_kernel_count: int
    gpu_time_us: float
    gpu_busy_us: float
    window_us: float
    devices: int
    runtime: dict[str, tuple[int, float]]
    ranges: dict[str, tuple[int, float]]
    cpu_ops: dict[str, tuple[int, float]]
    steps: tuple[StepStat, ...]
    step_families: dict[str, dict[str, float]] = field(default_factory=dict)
    measured_us: float | None = None
    #: without step annotations: user/NVTX range name → (count, GPU µs, activities)
    range_gpu: dict[str, tuple[int, float, int]] = field(default_factory=dict)

    @property
    def gpu_idle_us(self) -> float:
        return max(0.0, self.window_us - self.gpu_busy_us)


class _Device:
    __slots__ = ("corr", "end", "fam", "name", "start")

    def __init__(self) -> None:
        self.start = array("d")
        self.end = array("d")
        self.fam = array("B")
        self.name = array("I")
        self.corr = array("q")


class Timeline:
    """Accumulates GPU activities, launches and ranges of one process."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._names: dict[tuple[str, str], int] = {}
        self._name_list: list[tuple[str, str]] = []
        self._devices: dict[int, _Device] = {}
        self._graph_corr: set[int] = set()
        self._graph_flag: set[tuple[int, int]] = set()  # (device, index) known from args
        self.runtime: dict[str, list[float]] = {}
        self.ranges: dict[str, list[float]] = {}
        self.cpu_ops: dict[str, list[float]] = {}
        self._cpu_steps: list[tuple[float, float, str]] = []
        self._gpu_steps: list[tuple[float, float, str]] = []
        self._measured: list[tuple[float, float]] = []
        # Kineto timestamps are ~1e12 µs: kept relative to the first one seen, so that a
        # double still resolves nanoseconds and end - start gives back the duration
        self._base: float | None = None
        self._user_ranges: list[tuple[float, float, str, bool]] = []

    def _rel(self, ts: float) -> float:
        if self._base is None:
            self._base = ts
        return ts - self._base

    def activity(
        self,
        name: str,
        category: str,
        ts: float,
        dur: float,
        device: int,
        correlation: int,
        graph: bool = False,
    ) -> None:
        """A GPU activity: ``category`` is kernel, gpu_memcpy or gpu_memset."""
        k = (name, category)
        idx = self._names.get(k)
        if idx is None:
            idx = self._names[k] = len(self._name_list)
            self._name_list.append(k)
        d = self._devices.get(device)
        if d is None:
            d = self._devices[device] = _Device()
        if graph:
            self._graph_flag.add((device, len(d.start)))
        ts = self._rel(ts)
        d.start.append(ts)
        d.end.append(ts + dur)
        d.fam.append(_FAMILY_INDEX[families.family(name, category)])
        d.name.append(idx)
        d.corr.append(correlation)

    def launch(self, name: str, dur: float, correlation: int) -> None:
        """A CUDA runtime/driver call on the CPU."""
        agg = self.runtime.get(name)
        if agg is None:
            self.runtime[name] = [1.0, dur]
        else:
            agg[0] += 1
            agg[1] += dur
        if "GraphLaunch" in name:
            self._graph_corr.add(correlation)

    def cpu_op(self, name: str, dur: float) -> None:
        agg = self.cpu_ops.get(name)
        if agg is None:
            self.cpu_ops[name] = [1.0, dur]
        else:
            agg[0] += 1
            agg[1] += dur

    def annotation(self, name: str, ts: float, dur: float, gpu: bool) -> None:
        """A user/NVTX range; ``gpu`` for its projection on the GPU timeline."""
        ts = self._rel(ts)
        if phases.is_step(name):
            (self._gpu_steps if gpu else self._cpu_steps).append((ts, ts + dur, name))
            return
        if not name.startswith("vllmdiag:") and len(self._user_ranges) < MAX_RANGES:
            self._user_ranges.append((ts, ts + dur, name, gpu))
        if gpu:
            return
        if name == phases.MEASURED:
            self._measured.append((ts, ts + dur))
        agg = self.ranges.get(name)
        if agg is None:
            self.ranges[name] = [1.0, dur]
        else:
            agg[0] += 1
            agg[1] += dur

    def finish(self) -> TraceSummary:
        counts = [0] * len(self._name_list)
        totals = [0.0] * len(self._name_list)
        graphs = [0] * len(self._name_list)
        busy = window = 0.0
        gpu_min, gpu_max = float("inf"), float("-inf")
        for dev_id, d in self._devices.items():
            for i in range(len(d.start)):
                n = d.name[i]
                counts[n] += 1
                totals[n] += d.end[i] - d.start[i]
                if d.corr[i] in self._graph_corr or (dev_id, i) in self._graph_flag:
                    graphs[n] += 1
            b, lo, hi = _union(d.start, d.end)
            busy += b
            lo_w, hi_w = lo, hi
            for m0, m1 in self._measured:  # the launcher's window is the wall clock's
                lo_w, hi_w = min(lo_w, m0), max(hi_w, m1)
            window += hi_w - lo_w
            gpu_min, gpu_max = min(gpu_min, lo), max(gpu_max, hi)
        kernels: dict[str, KernelStat] = {}
        kernel_count = memop_count = graph_count = 0
        gpu_time = 0.0
        for n, (name, cat) in enumerate(self._name_list):
            fam = families.family(name, cat)
            if cat == "kernel":
                kernel_count += counts[n]
            else:
                memop_count += counts[n]
            graph_count += graphs[n]
            gpu_time += totals[n]
            key = name if cat == "kernel" else f"{name} [{cat}]"
            kernels[key] = KernelStat(name, fam, cat, counts[n], totals[n], graphs[n])
        steps, step_families = self._steps()
        range_gpu = {} if steps else self._range_phases()
        return TraceSummary(
            source=self.source,
            kernels=kernels,
            kernel_count=kernel_count,
            memop_count=memop_count,
            graph_kernel_count=graph_count,
            gpu_time_us=gpu_time,
            gpu_busy_us=busy,
            window_us=window,
            devices=len(self._devices),
            runtime={k: (int(v[0]), v[1]) for k, v in self.runtime.items()},
            ranges={k: (int(v[0]), v[1]) for k, v in self.ranges.items()},
            cpu_ops={k: (int(v[0]), v[1]) for k, v in self.cpu_ops.items()},
            steps=steps,
            step_families=step_families,
            measured_us=sum(m1 - m0 for m0, m1 in self._measured) or None,
            range_gpu=range_gpu,
        )

    def _range_phases(self) -> dict[str, tuple[int, float, int]]:
        """GPU time inside each user/NVTX range name, for traces without step names.

        GPU projections of the ranges are used where the trace has them; otherwise an
        activity belongs to a CPU range it starts inside (approximate: the GPU lags).
        Nested ranges each count the activities inside them.
        """
        have_gpu = any(g for _, _, _, g in self._user_ranges)
        by_name: dict[str, list[tuple[float, float]]] = {}
        for s, e, n, g in self._user_ranges:
            if g == have_gpu:
                by_name.setdefault(n, []).append((s, e))
        top = sorted(by_name, key=lambda n: -len(by_name[n]))[:MAX_RANGE_NAMES]
        from bisect import bisect_right

        out: dict[str, tuple[int, float, int]] = {}
        for name in top:
            spans = sorted(by_name[name])
            starts = [x[0] for x in spans]
            ends = [x[1] for x in spans]
            us, nk = 0.0, 0
            for d in self._devices.values():
                for i in range(len(d.start)):
                    t = d.start[i]
                    j = bisect_right(starts, t) - 1
                    if j >= 0 and t < ends[j]:
                        us += d.end[i] - t
                        nk += 1
            out[name] = (len(spans), us, nk)
        return out

    def _steps(self) -> tuple[tuple[StepStat, ...], dict[str, dict[str, float]]]:
        """Steps of the most specific spelling present, with the GPU time each holds.

        On the GPU timeline (``gpu_user_annotation``) a step owns the activities that
        start inside it; with only CPU ranges, a step owns what starts between its start
        and the next step's start (the GPU runs behind the CPU).
        """
        gpu = bool(self._gpu_steps)
        raw = self._gpu_steps if gpu else self._cpu_steps
        if not raw:
            return (), {}
        parsed = [(s, e, n, phases.parse_step(n)) for s, e, n in raw]
        best = min(_STEP_PRIORITY[p.spelling] for _, _, _, p in parsed if p)
        chosen = sorted(
            (s, e, n, p) for s, e, n, p in parsed if p and _STEP_PRIORITY[p.spelling] == best
        )
        starts = [c[0] for c in chosen]
        bounds = [c[1] for c in chosen] if gpu else [*starts[1:], float("inf")]
        gpu_us = [0.0] * len(chosen)
        nk = [0] * len(chosen)
        fam_us: dict[str, dict[str, float]] = {}
        kinds = [c[3].kind for c in chosen]
        from bisect import bisect_right

        for d in self._devices.values():
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
        steps = tuple(
            StepStat(n, p.kind, s, e - s, gpu_us[j], nk[j], p.output_tokens)
            for j, (s, e, n, p) in enumerate(chosen)
        )
        return steps, fam_us


def _union(start: array[float], end: array[float]) -> tuple[float, float, float]:
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
    first = start[order[0]]
    return total, first, last
