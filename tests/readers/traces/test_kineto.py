"""The streaming Kineto reader against json.load on real H200 traces."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from vllmdiag.readers.traces import kineto
from vllmdiag.readers.traces.kineto import TraceFormatError

H200 = FIXTURES / "traces" / "h200"
LEGS = ("eager", "graph", "sdpa")


def _reference(path: Path) -> tuple[Counter[str], dict[str, float], list[dict[str, object]]]:
    """Kernel counts and times the naive way: the whole file through json.load."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    counts = Counter(str(e["name"]) for e in kernels)
    totals: dict[str, float] = {}
    for e in kernels:
        totals[str(e["name"])] = totals.get(str(e["name"]), 0.0) + float(e["dur"])
    return counts, totals, events


@pytest.mark.parametrize("leg", LEGS)
def test_streamed_aggregates_equal_json_load(leg: str) -> None:
    path = H200 / leg / "trace.json.gz"
    counts, totals, events = _reference(path)
    s = kineto.read(path)
    assert s.kernel_count == sum(counts.values()) > 0
    for name, n in counts.items():
        assert s.kernels[name].count == n
        assert s.kernels[name].total_us == pytest.approx(totals[name])
    memops = [e for e in events if e.get("cat") in ("gpu_memcpy", "gpu_memset")]
    assert s.memop_count == len(memops)
    runtime = sum(
        float(e["dur"]) for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
    )
    assert sum(t for _, t in s.runtime.values()) == pytest.approx(runtime)
    # busy time is a union: never more than the summed durations, never more than the window
    assert s.gpu_busy_us <= s.gpu_time_us + 1e-6
    assert s.gpu_busy_us <= s.window_us


def test_every_graph_replayed_kernel_is_counted_and_attributed() -> None:
    s = kineto.read(H200 / "graph" / "trace.json.gz")
    # 40 replays of an 85-kernel decode step; the 80 host-side fills are launched eagerly
    assert s.graph_kernel_count == 3400
    assert s.kernel_count == 3480
    assert len(s.steps) == 40
    assert sum(st.kernels for st in s.steps) == s.kernel_count + s.memop_count
    assert sum(st.gpu_us for st in s.steps) == pytest.approx(s.gpu_time_us)


def test_eager_trace_has_no_graph_kernels() -> None:
    s = kineto.read(H200 / "eager" / "trace.json.gz")
    assert s.graph_kernel_count == 0
    assert s.measured_us is not None and s.measured_us > 0


@pytest.mark.parametrize("chunk", [7, 64, 1000])
def test_any_chunk_boundary_gives_the_same_result(
    chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "graph.json"
    plain.write_bytes(gzip.decompress((H200 / "graph" / "trace.json.gz").read_bytes()))
    whole = kineto.read(plain)
    monkeypatch.setattr(kineto, "CHUNK_CHARS", chunk)
    again = kineto.read(plain)
    assert again.kernel_count == whole.kernel_count
    assert again.gpu_time_us == pytest.approx(whole.gpu_time_us)
    assert [s.name for s in again.steps] == [s.name for s in whole.steps]


def test_header_keys_after_the_events_are_read(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(
        '{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k",'
        ' "ts": 1.5, "dur": 2, "args": {"device": 0, "correlation": 3}}], "traceName": "x"}'
    )
    header: dict[str, object] = {}
    events = list(kineto.iter_events(p, header))
    assert len(events) == 1
    assert header == {"schemaVersion": 1, "traceName": "x"}


def test_truncated_trace_is_an_error_not_a_short_result(tmp_path: Path) -> None:
    raw = gzip.decompress((H200 / "sdpa" / "trace.json.gz").read_bytes())
    p = tmp_path / "cut.json"
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(TraceFormatError, match=r"truncated|not closed"):
        kineto.read(p)


def test_not_a_trace(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"a": 1}')
    with pytest.raises(TraceFormatError, match="no traceEvents"):
        kineto.read(p)
