"""Which CPU operator launched each GPU activity, joined in bounded memory.

Kineto links a GPU activity to its launch two ways: the activity's ``External id`` is
the innermost operator (``cpu_op`` or ``user_annotation``) open on the launching thread,
and its ``correlation`` is the one of the runtime call that launched it
(``cudaLaunchKernel``, ``cuLaunchKernel``, ``cudaGraphLaunch``, ...), which carries the
External id too and sits, in time, inside that operator on the same thread.

What is kept while a trace streams past:

- operators as one 4-byte name index per External id (Kineto numbers them densely);
- a launch only while it is open: from the runtime call until its activity arrives
  (graph launches, which feed every kernel of a replay, stay open: one per replay);
- an activity without an External id only until its launch arrives.

A launch with no External id (a graph replayed outside any operator, or an nsys
export) is placed by time: the innermost user/NVTX range open on its thread, at
:meth:`~vllmdiag.readers.traces.timeline.Timeline.finish`.
"""

from __future__ import annotations

import re
from array import array

from vllmdiag.readers.traces import cxxnames, phases

GRAPH = "(CUDA graph replay)"
NO_OP = "(no CPU op)"
_MAX_GAP = 1 << 22  # External ids further than this past the last one go to a dict
MAX_OPEN = 1 << 16  # open launches / waiting activities kept at most

#: Kineto's Triton kernels: triton_{poi,per,red,tem,...}_fused_<the ops it fused>_<n>; a
#: kernel named only by its number (``triton_poi_fused_3``) says nothing of its ops
_TRITON = re.compile(r"^triton_[a-z]+_fused_+([A-Za-z].*?)(?:_\d+)*$")
#: Launchers that wrap compiled code: they say "compiled", not which op.
_WRAPPERS = re.compile(
    r"^(## Call CompiledFxGraph|Torch-Compiled Region|CompiledFunction|TorchDynamo|"
    r"AOTDispatcher|Pregraph bytecode|cudaGraphLaunch|vllmdiag:)"
)


class OpTable:
    """External id → operator name, as a dense array of name indexes."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self._base = -1
        self._dense = array("i")
        self._sparse: dict[int, int] = {}

    def intern(self, name: str) -> int:
        idx = self._index.get(name)
        if idx is None:
            idx = self._index[name] = len(self.names)
            self.names.append(name)
        return idx

    def set(self, ext: int, idx: int) -> None:
        if self._base < 0:
            self._base = ext
        off = ext - self._base
        dense = self._dense
        if off == len(dense):
            dense.append(idx)
        elif 0 <= off < len(dense):
            dense[off] = idx
        elif len(dense) < off <= len(dense) + _MAX_GAP:
            dense.extend([-1] * (off - len(dense)))
            dense.append(idx)
        else:
            self._sparse[ext] = idx

    def get(self, ext: int) -> int:
        off = ext - self._base
        if 0 <= off < len(self._dense):
            return self._dense[off]
        return self._sparse.get(ext, -1)


class LaunchJoin:
    """Pairs activities and launches on their correlation id, keeping only what is open.

    A link is an External id (> 0) or ``-(k + 1)`` for the k-th launch that had none
    (placed by time later); 0 means unknown. Open launches and waiting activities are
    capped (oldest dropped first, and counted): a trace whose links never close cannot
    grow them without bound.
    """

    def __init__(self) -> None:
        self.open: dict[int, int] = {}  # launches waiting for their activity
        self.closed: dict[int, None] = {}  # activities (with an External id) before launch
        self.graphs: dict[int, int] = {}
        self.waiting: dict[int, list[int]] = {}  # activities waiting for their launch
        self.launch_tid = array("q")
        self.launch_ts = array("d")
        self.peak_open = 0
        self.dropped = 0

    def activity(self, corr: int, has_ext: bool, handle: int) -> int:
        """The link of an activity without an External id (0: it waits for its launch);
        an activity with one closes its launch."""
        graph = self.graphs.get(corr)
        if has_ext:
            if graph is None and self.open.pop(corr, None) is None:
                self.closed[corr] = None  # its launch, still to come, needs no keeping
                if len(self.closed) > MAX_OPEN:
                    del self.closed[next(iter(self.closed))]
                self._held()
            return 0
        if graph is not None:
            return graph
        link = self.open.pop(corr, None)
        if link is not None:
            return link
        self.waiting.setdefault(corr, []).append(handle)
        if len(self.waiting) > MAX_OPEN:
            self.dropped += len(self.waiting.pop(next(iter(self.waiting))))
        self._held()
        return 0

    def _held(self) -> None:
        self.peak_open = max(self.peak_open, len(self.open) + len(self.closed) + len(self.waiting))

    def launch(
        self, corr: int, ext: int, tid: int, ts: float, graph: bool
    ) -> tuple[int, list[int]]:
        """(the launch's link, the waiting activities it resolves)."""
        link = ext if ext > 0 else self.place(tid, ts)
        done = self.waiting.pop(corr, [])
        if graph:
            self.graphs[corr] = link
        elif self.closed.pop(corr, 0) is None:
            pass  # its activity came first and named its op: nothing to keep
        elif not done:
            self.open[corr] = link
            if len(self.open) > MAX_OPEN:
                del self.open[next(iter(self.open))]
            self._held()
        return link, done

    def place(self, tid: int, ts: float) -> int:
        """The link of a launch known only by where it sat: (thread, time)."""
        self.launch_tid.append(tid)
        self.launch_ts.append(ts)
        return -len(self.launch_ts)

    def unresolved(self) -> int:
        """Activities still waiting for a launch that never came, and those dropped."""
        return self.dropped + sum(len(v) for v in self.waiting.values())

    def placed(self, link: int) -> tuple[int, float]:
        """(thread, time) of an ext-less launch."""
        return self.launch_tid[-link - 1], self.launch_ts[-link - 1]


def is_launch(name: str) -> bool:
    """Runtime calls that put work on the GPU (and so have an activity to pair with)."""
    return "Launch" in name or "Memcpy" in name or "Memset" in name


def triton_ops(kernel: str) -> str | None:
    """The ops a Triton kernel fused, from its name (``triton_per_fused__fused_rms_norm_
    add_0`` → ``fused_rms_norm_add``), or None for any other kernel and for a Triton
    kernel whose name gives only a number."""
    m = _TRITON.match(kernel)
    return m.group(1).strip("_") if m else None


def is_wrapper(op: str) -> bool:
    """Ranges that hold a launch without naming the op: compiled-graph calls, graph
    launches, engine steps, vllmdiag's own phases."""
    return bool(_WRAPPERS.match(op)) or phases.is_step(op)


def op_key(kernel: str, op: str) -> str | None:
    """What two sides' kernels are paired on when their names differ: the launching
    operator without its namespace (``_C::fused_add_rms_norm`` → ``fused_add_rms_norm``),
    or for a Triton kernel the ops it fused; None where nothing names the op."""
    fused = triton_ops(cxxnames.function_name(kernel))
    if fused:
        return fused.lower()
    if op in (GRAPH, NO_OP) or is_wrapper(op) or triton_ops(op):
        return None
    return op.rsplit("::", 1)[-1].rsplit(".", 1)[-1].strip("_ ").lower() or None


def tokens(key: str) -> tuple[str, ...]:
    return tuple(t for t in key.split("_") if t)


def contains(big: str, small: str) -> bool:
    """Whether ``small``'s words run, in order and contiguously, inside ``big``'s."""
    b, s = tokens(big), tokens(small)
    return bool(s) and any(b[i : i + len(s)] == s for i in range(len(b) - len(s) + 1))
