"""Kineto (torch profiler) traces, ``.json`` and ``.json.gz``, folded as they stream.

:mod:`jsonstream` yields the events; each is checked, folded into a
:class:`~vllmdiag.readers.traces.timeline.Timeline` and dropped. An event whose fields have the
wrong types (``dur`` a string or null, no ``ts``, ``args`` a list, a ``device`` that is
no integer, a name that is no string), or whose times are negative, infinite or NaN,
is refused and counted by reason, never folded in as a number.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from vllmdiag.readers.traces.jsonstream import CHUNK_CHARS, TraceFormatError, iter_events
from vllmdiag.readers.traces.timeline import Timeline, TraceSummary

__all__ = ["CHUNK_CHARS", "TraceFormatError", "iter_events", "read"]

_NUMS = (int, float)
_INF = math.inf

# Old Kineto spellings → the ones used since torch 1.13.
_CATEGORY = {
    "kernel": "kernel",
    "gpu_memcpy": "gpu_memcpy",
    "memcpy": "gpu_memcpy",
    "gpu_memset": "gpu_memset",
    "memset": "gpu_memset",
    "cuda_runtime": "cuda_runtime",
    "runtime": "cuda_runtime",
    "cuda_driver": "cuda_runtime",
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
}


def _number(value: Any, what: str, *, negative_ok: bool = False) -> str | None:
    """Why ``value`` is no usable time, or None when it is one."""
    if value.__class__ not in _NUMS:
        return f"{what} is {'missing' if value is None else 'not a number'}"
    if not -_INF < value < _INF:
        return f"{what} is not finite"
    if value < 0 and not negative_ok:
        return f"{what} is negative"
    return None


def _integer(args: dict[str, Any], key: str, default: int) -> int | None:
    """An integer field of ``args`` (``default`` when absent), None when it is no integer."""
    value = args.get(key, default)
    return value if value.__class__ is int else None


def _problem(ev: dict[str, Any], cat: str) -> str | None:
    """Why a complete (``X``) event cannot be folded in, or None (CPU operators are
    only counted and summed: they need no time stamp)."""
    if ev.get("name").__class__ is not str:
        return "name is not a string"
    why = _number(ev.get("dur"), "dur")
    if not why and cat != "cpu_op":
        why = _number(ev.get("ts"), "ts", negative_ok=True)
    if why:
        return why
    args = ev.get("args")
    if args is not None and args.__class__ is not dict:
        return "args is not an object"
    return None


def read(path: Path) -> TraceSummary:
    """Fold one Kineto trace into its summary."""
    tl = Timeline(str(path))
    skip = tl.skip
    cpu_ops, op_set, intern = tl.cpu_ops, tl.op_table.set, tl.op_table.intern
    for ev in iter_events(path, on_skip=skip):
        if ev.__class__ is not dict:
            skip("event is not an object")
            continue
        raw = ev.get("cat")
        if raw == "cpu_op":  # most events: checked and aggregated inline
            name: Any = ev.get("name")
            dur: Any = ev.get("dur")
            args: Any = ev.get("args")
            agg = cpu_ops.get(name) if name.__class__ is str else None
            if (
                agg is None
                or dur.__class__ not in _NUMS
                or not 0 <= dur < _INF
                or (args is not None and args.__class__ is not dict)
            ):
                if _refused(tl, "cpu_op", ev):
                    continue
                agg = cpu_ops.get(name)
                if agg is None:
                    agg = cpu_ops[name] = [0.0, 0.0, float(intern(text(name)))]
            agg[0] += 1
            agg[1] += dur
            if args:
                ext = args.get("External id")
                if ext.__class__ is int and ext > 0:
                    op_set(ext, int(agg[2]))
            continue
        if raw is None or ev.get("ph") != "X":
            continue
        cat = _CATEGORY.get(raw) if raw.__class__ is str else None
        if cat is None:
            cat = _CATEGORY.get(str(raw).lower())
            if cat is None:
                continue
        if _refused(tl, cat, ev):
            continue
        _fold(tl, cat, ev)
    return tl.finish()


def _refused(tl: Timeline, cat: str, ev: dict[str, Any]) -> bool:
    why = _problem(ev, cat)
    if why:
        tl.skip(f"{cat}: {why}")
    return why is not None


def text(name: str) -> str:
    """``name`` as text every writer can encode: a lone surrogate (``"\\udc80"`` in the
    JSON) becomes its escape, so a summary, a picture and a terminal can all show it."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return name


def _fold(tl: Timeline, cat: str, ev: dict[str, Any]) -> None:
    name, ts, dur = text(ev["name"]), float(ev["ts"]), float(ev["dur"])
    args: dict[str, Any] = ev.get("args") or {}
    ext = _integer(args, "External id", 0)
    corr = _integer(args, "correlation", -1)
    if ext is None or corr is None:
        tl.skip(f"{cat}: {'External id' if ext is None else 'correlation'} is not an integer")
        return
    tid = ev.get("tid")
    tid = tid if tid.__class__ is int else 0
    if cat == "cpu_op":
        tl.cpu_op(name, dur, ext)
    elif cat in ("kernel", "gpu_memcpy", "gpu_memset"):
        device = args.get("device", ev.get("pid", 0))
        if device.__class__ is not int or device < 0:
            tl.skip(f"{cat}: device is not an integer")
            return
        graph = bool(args.get("graph id") or args.get("graph node id"))
        tl.activity(name, cat, ts, dur, device, corr, graph, ext)
    elif cat == "cuda_runtime":
        tl.launch(name, dur, corr, ext, tid, ts)
    else:
        tl.annotation(name, ts, dur, cat == "gpu_user_annotation", ext, tid)
