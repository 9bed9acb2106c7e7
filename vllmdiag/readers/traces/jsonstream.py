"""The ``traceEvents`` array of a Kineto trace, one event at a time, in bounded memory.

The file (``.json`` or ``.json.gz``) is never loaded whole: events are decoded with the
C JSON scanner over a sliding text buffer. A damaged file is one clean error naming it
(truncated or corrupt gzip, malformed JSON at ``file:line:col``, an unclosed array); an
event nested too deeply for the decoder is stepped over and reported to ``on_skip``.
"""

from __future__ import annotations

import gzip
import io
import json
import json.scanner
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from vllmdiag.errors import VllmdiagError

CHUNK_CHARS = 1 << 22
MAX_VALUE_CHARS = 1 << 26  # one event (or header value) longer than this is malformed
_WS = re.compile(r"[\s,]*")
_SPACE = re.compile(r"\s*")
_STRUCT = re.compile(r'["\\\[\]{}]')
HINT = "pass a torch profiler (Kineto) trace: .json or .json.gz"
DAMAGED = "the file is truncated or damaged: re-capture it, or copy it again"


class TraceFormatError(VllmdiagError):
    """A file that is not a readable Kineto trace."""


def open_text(path: Path) -> IO[str]:
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
        if magic == b"\x1f\x8b":
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
        return open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TraceFormatError(f"cannot read the trace: {exc.strerror or exc}", where=str(path),
                               hint=HINT) from None  # fmt: skip


class Scanner:
    """A text buffer over a stream, decoding one JSON value at a time."""

    def __init__(self, f: IO[str], where: str) -> None:
        self.f = f
        self.where = where
        self.buf = ""
        self.pos = 0
        self.eof = False
        self._lines = 0  # newlines in the text already dropped from the buffer
        decoder: Any = json.JSONDecoder()  # the C scanner reads its parse_* hooks
        scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(decoder)
        self.scan = scan

    def _fill(self) -> bool:
        try:
            data = self.f.read(CHUNK_CHARS)
        except (EOFError, OSError, zlib.error) as exc:
            what = str(exc).rstrip(".") or type(exc).__name__
            raise TraceFormatError(
                f"unreadable compressed data ({what})", where=self.where, hint=DAMAGED
            ) from None
        if not data:
            self.eof = True
            return False
        self._lines += self.buf.count("\n", 0, self.pos)
        self.buf = self.buf[self.pos :] + data
        self.pos = 0
        return True

    def at(self, pos: int) -> str:
        """``file:line:col`` of a position in the buffer."""
        line = self._lines + self.buf.count("\n", 0, pos) + 1
        col = pos - self.buf.rfind("\n", 0, pos)
        return f"{self.where}:{line}:{col}"

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
                f"expected {ch!r} but found {got or 'the end of the file'!r}",
                where=self.at(self.pos),
                hint=HINT if got else DAMAGED,
            )
        self.pos += 1

    def expect_end(self) -> None:
        """Nothing but whitespace after the document: a second document or garbage
        after it means the file is not one trace."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                raise TraceFormatError(
                    "more after the trace's closing brace (two documents concatenated, or "
                    "trailing garbage)",
                    where=self.at(self.pos),
                    hint="a trace file holds one JSON document: split it, or re-capture",
                )
            if not self._fill():
                return

    def value(self) -> tuple[bool, Any]:
        """(True, the next value), or (False, None) for one nested too deeply to decode
        (stepped over)."""
        self.peek()
        while True:
            try:
                obj, end = self.scan(self.buf, self.pos)
            except RecursionError:
                self.skip_value()
                return False, None
            except (StopIteration, ValueError) as exc:
                if isinstance(exc, ValueError) and not isinstance(exc, json.JSONDecodeError):
                    # not a short buffer: a number of 5,000 digits, say
                    raise TraceFormatError(
                        f"a value JSON cannot hold here ({str(exc)[:120]})",
                        where=self.at(self.pos),
                        hint="this is not a trace a profiler wrote: check where it came from",
                    ) from None
                # refill: the value may continue in the next chunk; but a value longer
                # than any event is malformed JSON, not a short buffer
                if len(self.buf) - self.pos < MAX_VALUE_CHARS and self._fill():
                    continue
                at = exc.value if isinstance(exc, StopIteration) else getattr(exc, "pos", None)
                if isinstance(at, int) and at < len(self.buf.rstrip()):
                    raise TraceFormatError(
                        "malformed JSON (or a file cut short)", where=self.at(at), hint=DAMAGED
                    ) from None
                raise TraceFormatError(
                    "the file ends inside a value (truncated)", where=self.at(self.pos),
                    hint="a capture killed before it flushed leaves a partial trace",
                ) from None  # fmt: skip
            # a value that ends exactly at the buffer's end may continue in the next chunk
            if end < len(self.buf) or self.eof or not self._fill():
                self.pos = end
                return True, obj

    def skip_value(self) -> None:
        """Step over one array or object without decoding it."""
        depth, in_str, i = 0, False, self.pos
        while True:
            buf = self.buf
            m = _STRUCT.search(buf, i)
            while m is not None:
                ch, i = m.group(), m.end()
                if in_str:
                    if ch == "\\":
                        i += 1
                    elif ch == '"':
                        in_str = False
                elif ch == '"':
                    in_str = True
                elif ch in "[{":
                    depth += 1
                else:
                    depth -= 1
                    if depth == 0:
                        self.pos = i
                        return
                m = _STRUCT.search(buf, i)
            consumed = max(i, len(buf)) - self.pos
            if not self._fill():
                raise TraceFormatError("the file ends inside a value (truncated)",
                                       where=self.where, hint=DAMAGED)  # fmt: skip
            i = consumed


def iter_events(
    path: Path, header: dict[str, Any] | None = None, on_skip: Callable[[str], None] | None = None
) -> Iterator[Any]:
    """Every entry of ``traceEvents``, in file order; other top-level keys go to
    ``header`` (when given) as they are met."""
    skipped = on_skip or (lambda _reason: None)
    with open_text(path) as f:
        sc = Scanner(f, str(path))
        sc.expect("{")
        seen = False
        while True:
            ch = sc.peek()
            if ch == "}":
                sc.pos += 1
                sc.expect_end()
                break
            if ch != '"':
                sc.expect('"')
            _, key = sc.value()
            sc.expect(":")
            if key != "traceEvents":
                ok, val = sc.value()
                if header is not None and ok:
                    header[key] = val
                continue
            seen = True
            if sc.peek() != "[":
                raise TraceFormatError("traceEvents is not an array", where=sc.at(sc.pos),
                                       hint=HINT)  # fmt: skip
            sc.pos += 1
            yield from _array(sc, skipped)
            sc.pos += 1
        if not seen:
            raise TraceFormatError("no traceEvents array", where=str(path), hint=HINT)


def _array(sc: Scanner, skipped: Callable[[str], None]) -> Iterator[Any]:
    """The entries of an array whose ``[`` was just read; leaves ``sc`` at its ``]``.

    The common case (an event wholly inside the buffer) runs on local variables; at a
    buffer boundary, or for an event the fast path cannot decode, the scanner's own
    methods refill, decode or step over it.
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
            except (StopIteration, ValueError, RecursionError):
                end = n
            if end < n:
                pos = end
                yield obj
                continue
        sc.pos = pos
        ch = sc.peek()
        if ch == "]":
            return
        if ch == "":
            raise TraceFormatError(
                "the file ends inside traceEvents (truncated)",
                where=sc.where,
                hint="a capture killed before it flushed leaves a partial trace",
            )
        ok, obj = sc.value()
        if ok:
            yield obj
        else:
            skipped("event nested too deeply to decode")
        buf, pos = sc.buf, sc.pos
        n = len(buf)
