"""One capture's GPU timeline, reduced to aggregates as its events stream past.

Readers (Kineto JSON, nsys SQLite) feed a :class:`Timeline` one event at a time;
:meth:`Timeline.finish` turns it into a frozen :class:`TraceSummary`. Per GPU activity
only a few numbers are kept, in typed arrays (about 50 bytes each), never the event.
Events a reader refuses are counted by reason (:meth:`Timeline.skip`), never dropped
silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vllmdiag.readers.traces import families, ops, phases, spans
from vllmdiag.readers.traces.spans import Activities, StepStat

_FAMILY_INDEX = {f: i for i, f in enumerate(families.FAMILIES)}
MAX_RANGES = 200_000  # user ranges kept for phases and launch placement (the rest counted)

__all__ = ["KernelStat", "StepStat", "Timeline", "TraceSummary"]


@dataclass(frozen=True)
class KernelStat:
    name: str
    family: str
    category: str
    count: int
    total_us: float
    graph_count: int
    #: (launching op, count, GPU µs), most GPU time first
    ops: tuple[tuple[str, int, float], ...] = ()


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
    #: events refused, by reason ("kernel: dur is not a number", ...)
    skipped: dict[str, int] = field(default_factory=dict)
    #: first to last engine step on the CPU, where the trace has CPU step ranges
    step_span_us: float | None = None
    #: launches held open at once by the launch/activity join (its memory bound)
    peak_open_launches: int = 0

    @property
    def gpu_idle_us(self) -> float:
        return max(0.0, self.window_us - self.gpu_busy_us)


class Timeline:
    """Accumulates GPU activities, launches, operators and ranges of one process."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._names: dict[tuple[str, str], int] = {}
        self._name_list: list[tuple[str, str]] = []
        self._name_family: list[str] = []  # each distinct name's family, found once
        self._devices: dict[int, Activities] = {}
        self._graph_flag: set[tuple[int, int]] = set()  # (device, index) known from args
        self.runtime: dict[str, list[float]] = {}
        self.ranges: dict[str, list[float]] = {}
        self.cpu_ops: dict[str, list[float]] = {}
        self.op_table = ops.OpTable()
        self.join = ops.LaunchJoin()
        self.skipped: dict[str, int] = {}
        self._cpu_steps: list[tuple[float, float, str]] = []
        self._gpu_steps: list[tuple[float, float, str]] = []
        self._measured: list[tuple[float, float]] = []
        # Kineto timestamps are ~1e12 µs: kept relative to the first one seen, so that a
        # double still resolves nanoseconds and end - start gives back the duration
        self._base: float | None = None
        self._user_ranges: list[tuple[float, float, str, bool, int]] = []

    def _rel(self, ts: float) -> float:
        if self._base is None:
            self._base = ts
        return ts - self._base

    def skip(self, reason: str) -> None:
        """An event refused (wrong field types, non-finite or negative times, ...)."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def activity(
        self,
        name: str,
        category: str,
        ts: float,
        dur: float,
        device: int,
        correlation: int,
        graph: bool = False,
        ext: int = 0,
        placed: tuple[int, float] | None = None,
    ) -> None:
        """A GPU activity: ``category`` is kernel, gpu_memcpy or gpu_memset; ``ext`` the
        External id of the operator that launched it (0: unknown, join by correlation);
        ``placed`` the (thread, time) of its launch where the reader joined it itself."""
        k = (name, category)
        idx = self._names.get(k)
        if idx is None:
            idx = self._names[k] = len(self._name_list)
            self._name_list.append(k)
            self._name_family.append(families.family(name, category))
        d = self._devices.get(device)
        if d is None:
            d = self._devices[device] = Activities()
        at = len(d.start)
        if graph:
            self._graph_flag.add((device, at))
        ts = self._rel(ts)
        d.start.append(ts)
        d.end.append(ts + dur)
        d.fam.append(_FAMILY_INDEX[self._name_family[idx]])
        d.name.append(idx)
        d.corr.append(correlation)
        link = ext if ext > 0 else 0
        if placed is not None and not link:
            link = self.join.place(placed[0], self._rel(placed[1]))
        elif correlation >= 0:
            got = self.join.activity(correlation, ext > 0, (device << 32) | at)
            link = link or got
        d.link.append(link)

    def launch(
        self, name: str, dur: float, correlation: int, ext: int = 0, tid: int = 0, ts: float = 0.0
    ) -> None:
        """A CUDA runtime/driver call on the CPU."""
        agg = self.runtime.get(name)
        if agg is None:
            self.runtime[name] = [1.0, dur]
        else:
            agg[0] += 1
            agg[1] += dur
        if correlation >= 0 and ops.is_launch(name):
            link, done = self.join.launch(
                correlation, ext, tid, self._rel(ts), "GraphLaunch" in name
            )
            for handle in done:
                self._devices[handle >> 32].link[handle & 0xFFFFFFFF] = link

    def cpu_op(self, name: str, dur: float, ext: int = 0) -> None:
        """A CPU operator; ``ext`` its External id, which launched activities name."""
        agg = self.cpu_ops.get(name)
        if agg is None:  # [count, µs, op-table index]
            agg = self.cpu_ops[name] = [0.0, 0.0, float(self.op_table.intern(name))]
        agg[0] += 1
        agg[1] += dur
        if ext > 0:
            self.op_table.set(ext, int(agg[2]))

    def annotation(
        self, name: str, ts: float, dur: float, gpu: bool, ext: int = 0, tid: int = 0
    ) -> None:
        """A user/NVTX range; ``gpu`` for its projection on the GPU timeline."""
        ts = self._rel(ts)
        if ext > 0 and not gpu:
            self.op_table.set(ext, self.op_table.intern(name))
        if phases.is_step(name):
            (self._gpu_steps if gpu else self._cpu_steps).append((ts, ts + dur, name))
            return
        if not name.startswith("vllmdiag:") and len(self._user_ranges) < MAX_RANGES:
            self._user_ranges.append((ts, ts + dur, name, gpu, tid))
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

    def _op_of(
        self, link: int, graph: bool, placed: dict[int, int], index: spans.RangeIndex
    ) -> int:
        """The op-table index naming what launched an activity with ``link``."""
        op = -1
        if link > 0:
            op = self.op_table.get(link)
        elif link < 0:
            op = placed.get(link, -2)
            if op == -2:
                name = index.innermost(*self.join.placed(link))
                op = placed[link] = self.op_table.intern(name) if name else -1
        if op < 0:
            op = self.op_table.intern(ops.GRAPH if graph else ops.NO_OP)
        return op

    def finish(self) -> TraceSummary:
        n_names = len(self._name_list)
        counts, totals, graphs = [0] * n_names, [0.0] * n_names, [0] * n_names
        by_op: dict[tuple[int, int], list[float]] = {}
        graph_corr = self.join.graphs
        placed: dict[int, int] = {}
        index = spans.RangeIndex(self._user_ranges)
        busy = window = 0.0
        for dev_id, d in self._devices.items():
            for i in range(len(d.start)):
                n = d.name[i]
                dur = d.end[i] - d.start[i]
                counts[n] += 1
                totals[n] += dur
                is_graph = d.corr[i] in graph_corr or (dev_id, i) in self._graph_flag
                graphs[n] += is_graph
                key = (n, self._op_of(d.link[i], is_graph, placed, index))
                agg = by_op.get(key)
                if agg is None:
                    by_op[key] = [1.0, dur]
                else:
                    agg[0] += 1
                    agg[1] += dur
            b, lo, hi = spans.union(d.start, d.end)
            busy += b
            for m0, m1 in self._measured:  # the launcher's window is the wall clock's
                lo, hi = min(lo, m0), max(hi, m1)
            window += hi - lo
        per_name: dict[int, list[tuple[str, int, float]]] = {}
        for (n, op), (c, us) in by_op.items():
            per_name.setdefault(n, []).append((self.op_table.names[op], int(c), us))
        del by_op
        kernels: dict[str, KernelStat] = {}
        kernel_count = memop_count = graph_count = 0
        for n, (name, cat) in enumerate(self._name_list):
            if cat == "kernel":
                kernel_count += counts[n]
            else:
                memop_count += counts[n]
            graph_count += graphs[n]
            label = name if cat == "kernel" else f"{name} [{cat}]"
            op_rows = tuple(sorted(per_name.get(n, []), key=lambda r: (-r[2], r[0])))
            kernels[label] = KernelStat(
                name, self._name_family[n], cat, counts[n], totals[n], graphs[n], op_rows
            )
        devs = list(self._devices.values())
        steps, step_families = spans.steps(devs, self._gpu_steps, self._cpu_steps)
        return TraceSummary(
            source=self.source,
            kernels=kernels,
            kernel_count=kernel_count,
            memop_count=memop_count,
            graph_kernel_count=graph_count,
            gpu_time_us=sum(totals),
            gpu_busy_us=busy,
            window_us=window,
            devices=len(self._devices),
            runtime={k: (int(v[0]), v[1]) for k, v in self.runtime.items()},
            ranges={k: (int(v[0]), v[1]) for k, v in self.ranges.items()},
            cpu_ops={k: (int(v[0]), v[1]) for k, v in self.cpu_ops.items()},
            steps=steps,
            step_families=step_families,
            measured_us=sum(m1 - m0 for m0, m1 in self._measured) or None,
            range_gpu={} if steps else spans.range_phases(devs, self._user_ranges),
            skipped=dict(self.skipped),
            step_span_us=spans.cpu_span(self._cpu_steps) if self._devices else None,
            peak_open_launches=self.join.peak_open,
        )
