"""Reader of Nsight Systems SQLite exports (``nsys export --type sqlite``).

Kernels come from ``CUPTI_ACTIVITY_KIND_KERNEL`` (names through ``StringIds``; a kernel
replayed from a CUDA graph carries a ``graphNodeId`` when traced with
``--cuda-graph-trace=node``), copies and sets from ``..._MEMCPY`` / ``..._MEMSET``,
launches from ``..._RUNTIME`` (paired with their kernels on ``correlationId``, and
placed in the innermost NVTX range open on their thread), ranges from ``NVTX_EVENTS``.
Times are nanoseconds there and microseconds here. Rows are streamed from the cursor,
never fetched whole; a row with a NULL or inverted start/end is refused and counted.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.readers.traces.timeline import Timeline, TraceSummary

_NS = 1e-3
# NVTX_EVENTS.eventType: push/pop ranges and start/end ranges
_NVTX_RANGES = (59, 60, 70, 71)


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _span(start: object, end: object) -> tuple[float, float] | None:
    """(start µs, duration µs) of a row, or None when its times are missing or wrong."""
    if not isinstance(start, (int, float)) or not isinstance(end, (int, float)):
        return None
    s, e = float(start), float(end)
    if not (math.isfinite(s) and math.isfinite(e)) or e < s:
        return None
    return s * _NS, (e - s) * _NS


def _why(start: object, end: object) -> str:
    if start is None or end is None:
        return "NULL start or end"
    return "start/end not finite numbers, or end before start"


def read(path: Path) -> TraceSummary:
    """Fold one nsys SQLite export into its summary."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = _tables(db)
    except sqlite3.DatabaseError as exc:
        raise VllmdiagError(
            f"not an SQLite file: {exc}",
            where=str(path),
            hint="export the report with: nsys export --type sqlite REPORT.nsys-rep",
        ) from None
    tl = Timeline(str(path))
    try:
        if "NVTX_EVENTS" in tables:  # first: launches are placed inside these ranges
            _ranges(db, tl)
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            _kernels(db, tl, "CUPTI_ACTIVITY_KIND_RUNTIME" in tables)
        for table, cat, label in (
            ("CUPTI_ACTIVITY_KIND_MEMCPY", "gpu_memcpy", "Memcpy"),
            ("CUPTI_ACTIVITY_KIND_MEMSET", "gpu_memset", "Memset"),
        ):
            if table in tables:
                kind = "copyKind" if "copyKind" in _columns(db, table) else "0"
                q = f"SELECT start, end, deviceId, correlationId, {kind} FROM {table}"
                for start, end, dev, corr, k in db.execute(q):
                    span = _span(start, end)
                    if span is None or dev.__class__ is not int:
                        tl.skip(f"{cat}: {_why(start, end) if span is None else 'no device'}")
                        continue
                    name = f"{label} kind {k}" if cat == "gpu_memcpy" else label
                    tl.activity(name, cat, span[0], span[1], dev, _corr(corr))
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:  # kernels were joined in SQL: count
            q = (
                "SELECT s.value, r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                "JOIN StringIds s ON s.id = r.nameId"
            )
            for name, start, end in db.execute(q):
                span = _span(start, end)
                if span is None:
                    tl.skip(f"cuda_runtime: {_why(start, end)}")
                    continue
                tl.launch(name, span[1], -1)
    except sqlite3.DatabaseError as exc:
        raise VllmdiagError(
            f"unreadable nsys export: {exc}",
            where=str(path),
            hint="re-export with a current nsys: nsys export --type sqlite",
        ) from None
    finally:
        db.close()
    return tl.finish()


def _corr(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _ranges(db: sqlite3.Connection, tl: Timeline) -> None:
    cols = _columns(db, "NVTX_EVENTS")
    text = "COALESCE(n.text, s.value)" if "textId" in cols else "n.text"
    join = "LEFT JOIN StringIds s ON s.id = n.textId" if "textId" in cols else ""
    tid = "n.globalTid" if "globalTid" in cols else "0"
    q = (
        f"SELECT {text}, n.start, n.end, {tid} FROM NVTX_EVENTS n {join} "
        f"WHERE n.eventType IN {_NVTX_RANGES}"
    )
    for name, start, end, thread in db.execute(q):
        span = _span(start, end)
        if span is None:
            tl.skip(f"NVTX range: {_why(start, end)}")
        elif name:
            tl.annotation(name, span[0], span[1], gpu=False, tid=thread or 0)


def _kernels(db: sqlite3.Connection, tl: Timeline, runtime: bool) -> None:
    """Kernels, each with where its launch sat (thread, time), joined in SQLite on
    ``correlationId`` (within one process): the innermost NVTX range open there names
    what launched it."""
    cols = _columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    name_col = "demangledName" if "demangledName" in cols else "shortName"
    graph_col = "k.graphNodeId" if "graphNodeId" in cols else "NULL"
    launch, join = "NULL, NULL", ""
    if runtime:
        launch = "r.globalTid, r.start"
        join = "LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId"
        if "globalPid" in cols and "globalTid" in _columns(db, "CUPTI_ACTIVITY_KIND_RUNTIME"):
            join += " AND (r.globalTid >> 24) = (k.globalPid >> 24)"
    q = (
        f"SELECT s.value, k.start, k.end, k.deviceId, k.correlationId, {graph_col}, {launch} "
        f"FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.{name_col} {join}"
    )
    for name, start, end, dev, corr, node, tid, at in db.execute(q):
        span = _span(start, end)
        if span is None or dev.__class__ is not int:
            tl.skip(f"kernel: {_why(start, end) if span is None else 'no device'}")
            continue
        placed = (tid, float(at) * _NS) if at.__class__ in (int, float) else None
        tl.activity(str(name), "kernel", span[0], span[1], dev, _corr(corr), bool(node),
                    placed=placed)  # fmt: skip
