"""Streaming reader of Kineto (torch profiler) traces: ``.json`` and ``.json.gz``.

The file is never loaded whole: the ``traceEvents`` array is walked one event at a time
with the C JSON scanner over a sliding text buffer, each event is folded into a
:class:`~vllmdiag.profile.timeline.Timeline` and dropped. Memory stays at the buffer plus
the aggregates, whatever the trace's size.
"""

from __future__ import annotations

import gzip
import io
import json
import json.scanner
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from vllmdiag.errors import VllmdiagError
from vllmdiag.profile.timeline import Timeline, TraceSummary

CHUNK_CHARS = 1 << 22
_WS = re.compile(r"[\s,]*")

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


class TraceFormatError(VllmdiagError):
    """A file that is not a readable Kineto trace."""


def _open(path: Path) -> IO[str]:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


class _Scanner:
    """A text buffer over a stream, decoding one JSON value at a time."""

    def __init__(self, f: IO[str], where: str) -> None:
        self.f = f
        self.where = where
        self.buf = ""
        self.pos = 0
        self.eof = False
        decoder: Any = json.JSONDecoder()  # the C scanner reads its parse_* hooks
        scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(decoder)
        self.scan = scan

    def _fill(self) -> bool:
        data = self.f.read(CHUNK_CHARS)
        if not data:
            self.eof = True
            return False
        self.buf = self.buf[self.pos :] + data
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next significant character (commas count as whitespace), '' at EOF."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def expect(self, ch: str) -> None:
        got = self.peek()
        if got != ch:
            raise TraceFormatError(
                f"expected {ch!r} but found {got or 'end of file'!r}",
                where=self.where,
                hint="pass a torch profiler (Kineto) trace: .json or .json.gz",
            )
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                obj, end = self.scan(self.buf, self.pos)
            except (StopIteration, ValueError) as exc:
                if self._fill():
                    continue
                raise TraceFormatError(
                    f"truncated or malformed JSON ({exc})",
                    where=self.where,
                    hint="a capture killed before it flushed leaves a partial trace",
                ) from None
            # a value that ends exactly at the buffer's end may continue in the next chunk
            if end < len(self.buf) or self.eof or not self._fill():
                self.pos = end
                return obj


def iter_events(path: Path, header: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every event of ``traceEvents``, in file order; other top-level keys go to
    ``header`` (when given) as they are met."""
    with _open(path) as f:
        sc = _Scanner(f, str(path))
        sc.expect("{")
        seen = False
        while True:
            ch = sc.peek()
            if ch == "}":
                break
            if ch != '"':
                sc.expect('"')
            key = sc.value()
            sc.expect(":")
            if key != "traceEvents":
                val = sc.value()
                if header is not None:
                    header[key] = val
                continue
            seen = True
            sc.expect("[")
            yield from _array(sc)
            sc.pos += 1
        if not seen:
            raise TraceFormatError(
                "no traceEvents array",
                where=str(path),
                hint="pass a torch profiler (Kineto) trace: .json or .json.gz",
            )


def _array(sc: _Scanner) -> Iterator[dict[str, Any]]:
    """The events of an array whose ``[`` was just read; leaves ``sc`` at its ``]``.

    The common case (an event wholly inside the buffer) runs on local variables; at a
    buffer boundary the scanner's own methods refill and decode.
    """
    scan, ws = sc.scan, _WS.match
    buf, pos = sc.buf, sc.pos
    n = len(buf)
    while True:
        pos = ws(buf, pos).end()  # type: ignore[union-attr]
        if pos < n:
            if buf[pos] == "]":
                sc.pos = pos
                return
            try:
                obj, end = scan(buf, pos)
            except (StopIteration, ValueError):
                end = n
            if end < n:
                pos = end
                if isinstance(obj, dict):
                    yield obj
                continue
        sc.pos = pos
        ch = sc.peek()
        if ch == "]":
            return
        if ch == "":
            raise TraceFormatError("traceEvents is not closed", where=sc.where, hint="re-capture")
        obj = sc.value()
        if isinstance(obj, dict):
            yield obj
        buf, pos = sc.buf, sc.pos
        n = len(buf)


def read(path: Path) -> TraceSummary:
    """Fold one Kineto trace into its summary."""
    tl = Timeline(str(path))
    activity, launch, cpu_op, annotation = tl.activity, tl.launch, tl.cpu_op, tl.annotation
    cats = _CATEGORY
    cpu_ops = tl.cpu_ops
    for ev in iter_events(path):
        raw = ev.get("cat")
        if raw == "cpu_op":  # most events: aggregated inline
            name = ev.get("name", "")
            agg = cpu_ops.get(name)
            if agg is None:
                cpu_ops[name] = [1.0, float(ev.get("dur", 0.0))]
            else:
                agg[0] += 1
                agg[1] += ev.get("dur", 0.0)
            continue
        if raw is None or ev.get("ph") != "X":
            continue
        cat = cats.get(raw)
        if cat is None:
            cat = cats.get(str(raw).lower())
            if cat is None:
                continue
        name = ev.get("name", "")
        dur = float(ev.get("dur", 0.0))
        if cat == "cpu_op":
            cpu_op(name, dur)
            continue
        args = ev.get("args") or {}
        if cat == "kernel" or cat == "gpu_memcpy" or cat == "gpu_memset":
            graph = bool(args.get("graph id") or args.get("graph node id"))
            activity(
                name,
                cat,
                float(ev["ts"]),
                dur,
                int(args.get("device", ev.get("pid", 0)) or 0),
                int(args.get("correlation", -1)),
                graph,
            )
        elif cat == "cuda_runtime":
            launch(name, dur, int(args.get("correlation", -1)))
        else:
            annotation(name, float(ev["ts"]), dur, cat == "gpu_user_annotation")
    return tl.finish()
