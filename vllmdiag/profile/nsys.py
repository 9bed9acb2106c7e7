"""Reader of Nsight Systems SQLite exports (``nsys export --type sqlite``).

Kernels come from ``CUPTI_ACTIVITY_KIND_KERNEL`` (names through ``StringIds``; a kernel
replayed from a CUDA graph carries a ``graphNodeId`` when traced with
``--cuda-graph-trace=node``), copies and sets from ``..._MEMCPY`` / ``..._MEMSET``,
launches from ``..._RUNTIME``, ranges from ``NVTX_EVENTS``. Times are nanoseconds there
and microseconds here. Rows are streamed from the cursor, never fetched whole.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.profile.timeline import Timeline, TraceSummary

_NS = 1e-3
# NVTX_EVENTS.eventType: push/pop ranges and start/end ranges
_NVTX_RANGES = (59, 60, 70, 71)


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


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
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            cols = _columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
            name_col = "demangledName" if "demangledName" in cols else "shortName"
            graph_col = "k.graphNodeId" if "graphNodeId" in cols else "NULL"
            rows = db.execute(
                f"SELECT s.value, k.start, k.end, k.deviceId, k.correlationId, {graph_col} "
                f"FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.{name_col}"
            )
            for name, start, end, dev, corr, node in rows:
                tl.activity(name, "kernel", start * _NS, (end - start) * _NS, dev, corr, bool(node))
        for table, cat, label in (
            ("CUPTI_ACTIVITY_KIND_MEMCPY", "gpu_memcpy", "Memcpy"),
            ("CUPTI_ACTIVITY_KIND_MEMSET", "gpu_memset", "Memset"),
        ):
            if table in tables:
                kind = "copyKind" if "copyKind" in _columns(db, table) else "0"
                q = f"SELECT start, end, deviceId, correlationId, {kind} FROM {table}"
                for start, end, dev, corr, k in db.execute(q):
                    name = f"{label} kind {k}" if cat == "gpu_memcpy" else label
                    tl.activity(name, cat, start * _NS, (end - start) * _NS, dev, corr)
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
            q = (
                "SELECT s.value, r.start, r.end, r.correlationId "
                "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId"
            )
            for name, start, end, corr in db.execute(q):
                tl.launch(name, (end - start) * _NS, corr)
        if "NVTX_EVENTS" in tables:
            text = (
                "COALESCE(n.text, s.value)" if "textId" in _columns(db, "NVTX_EVENTS") else "n.text"
            )
            join = "LEFT JOIN StringIds s ON s.id = n.textId" if "COALESCE" in text else ""
            q = (
                f"SELECT {text}, n.start, n.end FROM NVTX_EVENTS n {join} "
                f"WHERE n.eventType IN {_NVTX_RANGES} AND n.end IS NOT NULL"
            )
            for name, start, end in db.execute(q):
                if name:
                    tl.annotation(name, start * _NS, (end - start) * _NS, gpu=False)
    except sqlite3.DatabaseError as exc:
        raise VllmdiagError(
            f"unreadable nsys export: {exc}",
            where=str(path),
            hint="re-export with a current nsys: nsys export --type sqlite",
        ) from None
    finally:
        db.close()
    return tl.finish()
