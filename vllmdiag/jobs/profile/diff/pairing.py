"""Kernel rows of a diff: kernels matched by name, and by launching op where names differ.

Kernels first match on (family, normalised name). What is left on one side only is
paired by the operator that launched it (:func:`ops.op_key`): eager
``vllm::fused_add_rms_norm_kernel`` launched by ``_C::fused_add_rms_norm`` and compiled
``triton_per_fused_fused_add_rms_norm`` are the same op done two ways, one row. A Triton
kernel that fused several ops also takes the unmatched kernels of the ops it fused
(``triton_poi_fused_mul_silu`` ← ``aten::silu``'s and ``aten::mul``'s kernels).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from vllmdiag.readers.traces import families, ops
from vllmdiag.readers.traces.timeline import KernelStat

_FX_HASH = re.compile(r"(## Call CompiledFxGraph) \w+ (##)")


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
    a_op: str | None = None  # the op that launched most of A's time in this row
    b_op: str | None = None
    paired_by: str | None = None  # the op key two differently named kernels share
    a_names: tuple[str, ...] = ()
    b_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpRow:
    """GPU time by launching op (its key, or the label where nothing names the op)."""

    op: str
    a_us: float
    b_us: float
    delta_us: float
    share: float | None
    kernels: tuple[str, ...]  # the kernels it launched, most GPU time first


@dataclass
class _Group:
    name: str
    family: str
    us: float = 0.0
    count: int = 0
    ops: dict[str, float] = field(default_factory=dict)

    @property
    def op(self) -> str | None:
        return max(self.ops, key=lambda o: (self.ops[o], o)) if self.ops else None

    @property
    def key(self) -> str | None:
        return ops.op_key(self.name, self.op or ops.NO_OP)


def label(op: str) -> str:
    """An op as the tables show it: compiled-graph calls without their per-build hash."""
    return _FX_HASH.sub(r"\1 \2", op)


def _groups(kernels: Iterable[KernelStat]) -> dict[tuple[str, str], _Group]:
    out: dict[tuple[str, str], _Group] = {}
    for k in kernels:
        key = (k.family, families.normalise(k.name))
        g = out.get(key)
        if g is None:
            g = out[key] = _Group(key[1], key[0])
        g.us += k.total_us
        g.count += k.count
        for op, _, us in k.ops:
            g.ops[label(op)] = g.ops.get(label(op), 0.0) + us
    return out


def _share(part: float, total: float) -> float | None:
    return part / total if abs(total) > 1e-9 else None


def _row(a: list[_Group], b: list[_Group], delta: float, paired_by: str | None) -> KernelRow:
    ta, tb = sum(g.us for g in a), sum(g.us for g in b)
    ca, cb = sum(g.count for g in a), sum(g.count for g in b)
    names_a, names_b = tuple(g.name for g in a), tuple(g.name for g in b)
    if paired_by is None:
        name = (a or b)[0].name
    else:
        name = f"{' + '.join(names_a)} ↔ {' + '.join(names_b)}"
    fams = sorted({g.family for g in (*a, *b)})
    big_a = max(a, key=lambda g: g.us, default=None)
    big_b = max(b, key=lambda g: g.us, default=None)
    return KernelRow(
        name=name,
        family=fams[0] if len(fams) == 1 else " ↔ ".join(fams),
        a_us=ta,
        b_us=tb,
        a_count=ca,
        b_count=cb,
        delta_us=tb - ta,
        share=_share(tb - ta, delta),
        a_mean_us=ta / ca if ca else None,
        b_mean_us=tb / cb if cb else None,
        a_op=big_a.op if big_a else None,
        b_op=big_b.op if big_b else None,
        paired_by=paired_by,
        a_names=names_a,
        b_names=names_b,
    )


def kernel_rows(a: Iterable[KernelStat], b: Iterable[KernelStat], delta: float) -> list[KernelRow]:
    """Every kernel row, largest change (either way) first."""
    ga, gb = _groups(a), _groups(b)
    rows = [_row([ga[k]], [gb[k]], delta, None) for k in ga.keys() & gb.keys()]
    only_a = [ga[k] for k in sorted(ga.keys() - gb.keys())]
    only_b = [gb[k] for k in sorted(gb.keys() - ga.keys())]
    by_key_a: dict[str, list[_Group]] = {}
    by_key_b: dict[str, list[_Group]] = {}
    for g in only_a:
        if g.key:
            by_key_a.setdefault(g.key, []).append(g)
    for g in only_b:
        if g.key:
            by_key_b.setdefault(g.key, []).append(g)
    used: set[int] = set()
    for key in sorted(by_key_a.keys() & by_key_b.keys()):
        rows.append(_row(by_key_a[key], by_key_b[key], delta, key))
        used.update(id(g) for g in (*by_key_a[key], *by_key_b[key]))
    for fused_side, other_side, fused_is_b in ((only_b, only_a, True), (only_a, only_b, False)):
        for t in sorted(fused_side, key=lambda g: -g.us):
            if id(t) in used or t.key is None or ops.triton_ops(t.name) is None:
                continue
            taken = [
                g for g in other_side
                if id(g) not in used and g.key and ops.triton_ops(g.name) is None
                and ops.contains(t.key, g.key)
            ]  # fmt: skip
            if taken:
                a_side, b_side = (taken, [t]) if fused_is_b else ([t], taken)
                rows.append(_row(a_side, b_side, delta, t.key))
                used.update(id(g) for g in (*taken, t))
    for g in only_a:
        if id(g) not in used:
            rows.append(_row([g], [], delta, None))
    for g in only_b:
        if id(g) not in used:
            rows.append(_row([], [g], delta, None))
    rows.sort(key=lambda r: (-abs(r.delta_us), r.name))
    return rows


def op_rows(a: Iterable[KernelStat], b: Iterable[KernelStat], delta: float) -> list[OpRow]:
    """GPU time per launching op on both sides, largest change first."""
    per: dict[str, list[float]] = {}
    names: dict[str, dict[str, float]] = {}
    for side, kernels in enumerate((a, b)):
        for k in kernels:
            short = families.normalise(k.name)
            for op, _, us in k.ops:
                key = ops.op_key(k.name, op) or label(op)
                per.setdefault(key, [0.0, 0.0])[side] += us
                kn = names.setdefault(key, {})
                kn[short] = kn.get(short, 0.0) + us
    rows = [
        OpRow(op, ua, ub, ub - ua, _share(ub - ua, delta),
              tuple(sorted(names[op], key=lambda n: -names[op][n])[:4]))
        for op, (ua, ub) in per.items()
    ]  # fmt: skip
    rows.sort(key=lambda r: (-abs(r.delta_us), r.op))
    return rows
