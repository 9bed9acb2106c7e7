"""Which op launched each kernel (real H200 traces, and the join in every event order),
and kernels of different names paired across sides by that op."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from vllmdiag import codec
from vllmdiag.jobs.profile.diff import time_diff as diff
from vllmdiag.jobs.profile.diff.report import gpu_report
from vllmdiag.readers.traces import kineto, leg, nsys, ops
from vllmdiag.readers.traces.timeline import Timeline

TRACES = FIXTURES / "traces"
H200, COMPILE = TRACES / "h200", TRACES / "h200-compile"


def _ops(path: Path) -> dict[str, set[str]]:
    s = kineto.read(path / "trace.json.gz")
    return {k.name: {op for op, _, _ in k.ops} for k in s.kernels.values()}


def test_eager_kernels_name_their_aten_op() -> None:
    got = _ops(COMPILE / "eager")
    rms = next(n for n in got if "vectorized_layer_norm_kernel" in n)
    assert got[rms] == {"aten::_fused_rms_norm"}
    assert got["nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT"] == {"aten::mm"}
    assert all(ops.NO_OP not in v for v in got.values())


def test_compiled_triton_kernels_and_graph_replays() -> None:
    compiled = _ops(COMPILE / "compiled")
    assert compiled["triton_per_fused__fused_rms_norm_2"] == {"triton_per_fused__fused_rms_norm_2"}
    graph = _ops(COMPILE / "compiled-graph")
    assert any(o.startswith("## Call CompiledFxGraph") for o in graph["memcpy32_post"])
    # a graph replayed outside any op: its kernels are the replay's, counted as such
    replay = kineto.read(H200 / "graph" / "trace.json.gz")
    from_graphs = [k for k in replay.kernels.values() if k.graph_count]
    assert sum(k.graph_count for k in from_graphs) == 3400
    assert all(k.ops == ((ops.GRAPH, k.count, pytest.approx(k.total_us)),) for k in from_graphs)


@pytest.mark.parametrize(
    ("kernel", "fused"),
    [
        ("triton_per_fused__fused_rms_norm_2", "fused_rms_norm"),
        ("triton_poi_fused_mul_silu_slice_1", "mul_silu_slice"),
        ("triton_poi_fused__to_copy_embedding_rms_norm_0", "to_copy_embedding_rms_norm"),
        ("triton_poi_fused_3", None),  # a number names no op
        ("triton_red_fused_0_1", None),
        ("vllm::fused_add_rms_norm_kernel", None),
    ],
)
def test_the_ops_a_triton_kernel_fused(kernel: str, fused: str | None) -> None:
    assert ops.triton_ops(kernel) == fused
    if fused is None and kernel.startswith("triton_"):
        # nothing names its op: it is not paired, and a graph replay stays the replay's
        assert ops.op_key(kernel, ops.GRAPH) is None


@pytest.mark.parametrize("path", [H200 / "eager", H200 / "graph", COMPILE / "compiled-graph"])
def test_the_join_holds_only_what_is_open(path: Path) -> None:
    s = kineto.read(path / "trace.json.gz")
    assert s.kernel_count > 200
    assert s.peak_open_launches <= 16  # launches and kernels sit close together in the file


def _timeline(order: str) -> Timeline:
    """One eager launch (op known by External id only on the launch) and one graph
    launch of three kernels, in the order ``order`` gives ('k' kernel, 'l' launch)."""
    tl = Timeline("synthetic")
    tl.cpu_op("_C::fused_add_rms_norm", 5.0, ext=7)
    tl.annotation("model.forward", 0.0, 100.0, gpu=False, tid=1)
    events = {
        "l": [lambda: tl.launch("cudaLaunchKernel", 1.0, 10, ext=7, tid=1, ts=1.0),
              lambda: tl.launch("cudaGraphLaunch", 1.0, 11, ext=0, tid=1, ts=50.0)],
        "k": [lambda: tl.activity("vllm::fused_add_rms_norm_kernel", "kernel", 2.0, 3.0, 0, 10),
              *(lambda i=i: tl.activity(f"graph_kernel_{i}", "kernel", 60.0 + i, 1.0, 0, 11)
                for i in range(3))],
    }  # fmt: skip
    for kind in order:
        events[kind].pop(0)()
    return tl


@pytest.mark.parametrize("order", ["llkkkk", "kkkkll", "klkkkl", "lkkkkl"])
def test_any_order_of_launches_and_kernels(order: str) -> None:
    s = _timeline(order).finish()
    assert s.kernels["vllm::fused_add_rms_norm_kernel"].ops[0][0] == "_C::fused_add_rms_norm"
    # the graph launch had no External id: placed by time inside the open user range
    for i in range(3):
        assert s.kernels[f"graph_kernel_{i}"].ops[0][0] == "model.forward"
        assert s.kernels[f"graph_kernel_{i}"].graph_count == 1


def test_a_kernel_whose_launch_never_comes() -> None:
    tl = Timeline("x")
    tl.activity("k", "kernel", 1.0, 1.0, 0, 99)
    assert tl.join.unresolved() == 1
    assert tl.finish().kernels["k"].ops[0][0] == ops.NO_OP


def test_op_table_dense_and_sparse() -> None:
    t = ops.OpTable()
    a, b = t.intern("aten::mm"), t.intern("aten::add")
    t.set(1000, a)
    t.set(1003, b)
    t.set(5, b)  # before the base: kept apart
    t.set(1000 + (1 << 23), a)  # far past: kept apart
    assert (t.get(1000), t.get(1001), t.get(1003), t.get(5), t.get(1000 + (1 << 23))) == (
        a, -1, b, b, a,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("kernel", "op", "key"),
    [
        ("vllm::fused_add_rms_norm_kernel", "_C::fused_add_rms_norm", "fused_add_rms_norm"),
        ("triton_per_fused_fused_add_rms_norm_3", "## Call CompiledFxGraph ab ##",
         "fused_add_rms_norm"),
        ("triton_per_fused__fused_rms_norm_2", "triton_per_fused__fused_rms_norm_2",
         "fused_rms_norm"),
        ("nvjet_x", "aten::mm", "mm"),
        ("nvjet_x", ops.GRAPH, None),
        ("nvjet_x", "execute_context_0(0)_generation_8(8)", None),
        ("nvjet_x", "## Call CompiledFxGraph ab ##", None),
    ],
)  # fmt: skip
def test_op_keys(kernel: str, op: str, key: str | None) -> None:
    assert ops.op_key(kernel, op) == key


def test_compiled_vs_eager_pairs_kernels_by_op() -> None:
    a, b = leg.load(COMPILE / "eager"), leg.load(COMPILE / "compiled")
    d = diff.diff(a, b, top=50)
    paired = {r.paired_by: r for r in d.top if r.paired_by}
    rms = paired["fused_rms_norm"]
    assert rms.a_names == ("at::native::{anon}::vectorized_layer_norm_kernel",)
    assert rms.b_names == ("triton_per_fused__fused_rms_norm",)
    assert (rms.a_op, rms.b_op) == ("aten::_fused_rms_norm", "triton_per_fused__fused_rms_norm_2")
    silu = paired["mul_silu_split"]  # one Triton kernel fused silu and mul: both eager kernels
    assert silu.b_names == ("triton_poi_fused_mul_silu_split",) and len(silu.a_names) == 2
    # rows still add up to the whole GPU-time delta
    assert sum(r.delta_us for r in d.top) == pytest.approx(d.delta_us)
    by_op = {o.op: o for o in d.ops}
    assert by_op["fused_rms_norm"].a_us > 0 and by_op["fused_rms_norm"].b_us > 0
    assert "↔" in rms.name and json.dumps(codec.dump(gpu_report(d)))


def test_nsys_launches_are_placed_in_their_nvtx_range(tmp_path: Path) -> None:
    p = tmp_path / "n.sqlite"
    db = sqlite3.connect(p)
    db.executescript(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId "
        "INTEGER, correlationId INTEGER, demangledName INTEGER, globalPid INTEGER);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid "
        "INTEGER, correlationId INTEGER, nameId INTEGER);"
        "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT,"
        " globalTid INTEGER);"
        "INSERT INTO StringIds VALUES (0, 'void k<int>(int)'), (1, 'cudaLaunchKernel');"
        "INSERT INTO NVTX_EVENTS VALUES (0, 10000, 59, 'layer', 16777217),"
        " (1000, 2000, 59, 'attention', 16777217), (0, 10000, 59, 'other thread', 16777218);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1500, 1600, 16777217, 1, 1),"
        " (3000, 3100, 16777217, 2, 1);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1700, 2700, 0, 1, 0, 16777216),"
        " (3200, 4200, 0, 2, 0, 16777216);"
    )
    db.commit()
    db.close()
    s = nsys.read(p)
    (k,) = s.kernels.values()
    assert {op for op, _, _ in k.ops} == {"attention", "layer"}


def test_families_name_the_ops_that_launched_them() -> None:
    d = diff.diff(leg.load(COMPILE / "eager"), leg.load(COMPILE / "compiled-graph"))
    gemm = next(r for r in d.families if r.family == "GEMM")
    assert gemm.a_ops == ("aten::mm",)
    assert gemm.b_ops == ("## Call CompiledFxGraph ##",)  # the per-build hash is dropped
