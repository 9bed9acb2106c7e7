"""GPU slots: how many GPUs a cell needs, which GPUs a node has, and where a cell runs.

Timing runs (metric matrices, studies, profiles) are node-exclusive: a node runs one cell
at a time and that cell holds all of its GPUs, as the seeds ran for clean timings. Runs
that only ask pass or fail share a node: a cell that needs ``k`` GPUs gets ``k`` of the
node's free ones as its ``CUDA_VISIBLE_DEVICES``, and a node runs at most as many cells
at once as it has GPUs (at least one). A node whose GPUs are unknown (none found and no
``--gpus``) runs one cell at a time and checks nothing, as before there were slots.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from vllmdiag.errors import ConfigError
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan.cells import CellPlan
from vllmdiag.services import proc

#: vLLM's spellings of the parallel sizes whose product is the GPUs an engine takes.
_SIZES = {
    "-tp": "tensor-parallel",
    "--tensor-parallel-size": "tensor-parallel",
    "-pp": "pipeline-parallel",
    "--pipeline-parallel-size": "pipeline-parallel",
    "-dp": "data-parallel",
    "--data-parallel-size": "data-parallel",
}


@dataclass(frozen=True)
class GpuNeed:
    """How many GPUs a cell takes, and what says so (for the message when none fits)."""

    count: int
    why: str


def gpus_needed(recipe: Recipe, cell: CellPlan) -> GpuNeed:
    """``gpus:`` where the workload (or the recipe) declares it; else the product of the
    tensor-, pipeline- and data-parallel sizes in the workload's args and the cell's flags;
    else one GPU."""
    wl = recipe.workloads[cell.workload]
    declared = wl.gpus if wl.gpus is not None else recipe.gpus
    if declared is not None:
        return GpuNeed(declared, f"gpus: {declared} in the recipe")
    sizes = _sizes(wl.args)
    for flag in cell.flags:
        kind = _SIZES.get(_spelling(flag.name))
        if kind is not None and flag.value is not None and flag.value.isdigit():
            sizes[kind] = int(flag.value)
    if not sizes:
        return GpuNeed(1, "one GPU (no parallel size given)")
    count = 1
    for size in sizes.values():
        count *= size
    return GpuNeed(count, " × ".join(f"{kind} {n}" for kind, n in sizes.items()))


def _spelling(name: str) -> str:
    """vLLM reads ``--tensor_parallel_size`` as ``--tensor-parallel-size``."""
    return name.replace("_", "-") if name.startswith("--") else name


def _sizes(args: Sequence[str]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    tokens = list(args)
    for i, token in enumerate(tokens):
        name, eq, value = token.partition("=")
        kind = _SIZES.get(_spelling(name))
        if kind is None:
            continue
        if not eq:
            value = tokens[i + 1] if i + 1 < len(tokens) else ""
        if value.isdigit():
            sizes[kind] = int(value)
    return sizes


@dataclass(frozen=True)
class NodeSlots:
    """A node as the scheduler sees it: its GPU ids, or None where they are unknown."""

    id: str
    label: str
    gpus: tuple[str, ...] | None


@dataclass(frozen=True)
class Placement:
    """Where a cell runs: its node, the GPUs it holds, and the ``CUDA_VISIBLE_DEVICES``
    it gets (None: left as the node has it, for a cell that holds the whole node)."""

    node: str
    gpus: tuple[str, ...]
    visible: str | None
    whole: bool


class SlotScheduler:
    """Places cells on nodes (see the module's docstring); not thread-safe: one thread
    (the cell runner's) places and releases."""

    def __init__(self, nodes: Sequence[NodeSlots], *, exclusive: bool) -> None:
        self.exclusive = exclusive
        self._nodes = {n.id: n for n in nodes}
        self._order = [n.id for n in nodes]
        self._free = {n.id: list(n.gpus or ()) for n in nodes}
        self._running = dict.fromkeys(self._order, 0)
        self._whole: set[str] = set()

    @property
    def nodes(self) -> list[NodeSlots]:
        return [self._nodes[i] for i in self._order]

    def capacity(self, node: str) -> int:
        gpus = self._nodes[node].gpus
        if self.exclusive or gpus is None:
            return 1
        return max(1, len(gpus))

    def unplaceable(self, need: GpuNeed, eligible: Collection[str]) -> str | None:
        """Why no node of ``eligible`` could ever run a cell of this need, or None."""
        live = [self._nodes[i] for i in self._order if i in eligible]
        if not live:
            return "no live node has its leg"
        if any(n.gpus is None or need.count <= len(n.gpus) for n in live):
            return None
        largest = max(live, key=lambda n: len(n.gpus or ()))
        have = len(largest.gpus or ())
        where = f"node {largest.label}" if len(live) > 1 else "the node"
        return (
            f"it needs {need.count} GPU(s) ({need.why}) and the largest node has {have} ({where})"
        )

    def place(
        self, need: GpuNeed, eligible: Collection[str], *, whole: bool = False
    ) -> Placement | None:
        """A placement for the cell now, or None while no eligible node has room."""
        best: tuple[int, int, int] | None = None
        chosen = None
        for pos, node_id in enumerate(self._order):
            if node_id not in eligible or not self._fits(node_id, need, whole):
                continue
            room = (
                self.capacity(node_id) - self._running[node_id],
                len(self._free[node_id]),
                -pos,
            )
            if best is None or room > best:
                best, chosen = room, node_id
        if chosen is None:
            return None
        return self._take(chosen, need, whole)

    def _fits(self, node_id: str, need: GpuNeed, whole: bool) -> bool:
        gpus = self._nodes[node_id].gpus
        if node_id in self._whole or self._running[node_id] >= self.capacity(node_id):
            return False
        if whole or self.exclusive:
            return self._running[node_id] == 0 and (gpus is None or need.count <= len(gpus))
        if gpus is None:
            return True
        return need.count <= len(self._free[node_id])

    def _take(self, node_id: str, need: GpuNeed, whole: bool) -> Placement:
        self._running[node_id] += 1
        gpus = self._nodes[node_id].gpus
        if whole or self.exclusive or gpus is None:
            if whole:
                self._whole.add(node_id)
            return Placement(node_id, tuple(gpus or ()), None, whole or self.exclusive)
        free = self._free[node_id]
        taken, self._free[node_id] = free[: need.count], free[need.count :]
        return Placement(node_id, tuple(taken), ",".join(taken), False)

    def release(self, placement: Placement) -> None:
        node_id = placement.node
        if node_id not in self._nodes:
            return  # dropped meanwhile
        self._running[node_id] -= 1
        self._whole.discard(node_id)
        if placement.visible is not None:
            order = self._nodes[node_id].gpus or ()
            back = set(self._free[node_id]) | set(placement.gpus)
            self._free[node_id] = [g for g in order if g in back]

    def drop(self, node_id: str) -> None:
        """A node that left the cluster: nothing is placed on it again."""
        self._nodes.pop(node_id, None)
        if node_id in self._order:
            self._order.remove(node_id)

    def live(self) -> set[str]:
        return set(self._order)


#: A node has at most a few dozen GPUs; this bounds the fake slots ``--gpus N`` makes.
MAX_GPUS = 4096


def check_gpu_count(count: int | None) -> None:
    """``--gpus N`` is a count from 0 to :data:`MAX_GPUS`."""
    if count is not None and not 0 <= count <= MAX_GPUS:
        raise ConfigError(
            f"--gpus {count}: a GPU count is from 0 to {MAX_GPUS:,}",
            hint="give the number of GPUs (slots) to use, or leave --gpus out to use those "
            "this machine shows",
        )


def local_gpu_ids(override: int | None = None) -> tuple[str, ...] | None:
    """This machine's GPU ids: ``CUDA_VISIBLE_DEVICES`` where it is set, else one per
    ``nvidia-smi -L`` line; None where none is found. ``override`` (``--gpus N``) takes
    the first N of them, or, on a machine without GPUs, N fake slots ``0..N-1`` (their
    cells get real ``CUDA_VISIBLE_DEVICES`` values, as on a GPU node)."""
    check_gpu_count(override)
    found = _detected()
    if override is None:
        return found or None
    if found and override > len(found):
        raise ConfigError(
            f"--gpus {override}, but this node has {len(found)} GPU(s) ({', '.join(found)})",
            hint=f"give --gpus {len(found)} or fewer (or leave it out to use them all)",
        )
    if found:
        return found[:override]
    return tuple(str(i) for i in range(override))


def _detected() -> tuple[str, ...]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids: list[str] = []
        for item in (x.strip() for x in visible.split(",")):
            if not item or item.startswith("-"):  # CUDA stops at the first invalid entry
                break
            ids.append(item)
        return tuple(ids)
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ()
    done = proc.run([smi, "-L"], capture=True, timeout=30)
    if not done.ok:
        return ()
    count = sum(1 for line in done.stdout.splitlines() if line.startswith("GPU "))
    return tuple(str(i) for i in range(count))
