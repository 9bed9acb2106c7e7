"""Stream a log in blocks and hand only the lines that matter to a callback.

Most of a vLLM log is progress lines no triage needs. Every block is searched for a few
literals that any line triage cares about contains (a traceback header, an exception or
error word, a death or signal notice, the version and result lines): C-level substring
searches, ~0.4 s/GiB each, anywhere in the file, so a fatal line in the middle of a
huge log is found. Lines are handed over from a hit on (with a few lines of context
before it: the frames above an exception line) and for as long as the consumer says it
is in the middle of something. Memory stays flat: one block plus one carried partial
line, whatever the size.

The source is a path or a binary stream (standard input); gzip'd input is recognised by
its magic bytes and decompressed on the fly.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BLOCK = 1 << 20
MAX_LINE = 1 << 16  # longer lines (binary garbage, a giant config dump) are cut here
CONTEXT = 6  # lines before a hit handed over too (a header, the frames above)

#: Substrings of every line triage reads, searched in every block. Short on purpose:
#: ``rror`` is Error and error, ``atal`` Fatal and fatal, ``illed`` Killed and killed.
LITERALS: tuple[bytes, ...] = (
    b"Traceback (most recent call last)",
    b"rror",
    b"xception",
    b"died",
    b"illed",
    b"atchdog",
    b"atal",
    b"fault",
    b"dumped",
    b"signal",
    b"xit",
    b"engine (v",
    b"ersion",
    b"Throughput: ",
    b"Avg latency: ",
)

#: Kept for readers that want a regex instead of literals (the fingerprint reader).
MARKERS = re.compile(b"|".join(re.escape(lit) for lit in LITERALS))

Feed = Callable[[int, bytes], None]
Source = Path | BinaryIO


@dataclass(frozen=True)
class ScanInfo:
    lines: int
    size: int
    ends_mid_line: bool
    cut_lines: int
    last_line: bytes = b""  # the last non-blank line, where a log that just stops stopped
    compressed: bool = False


def _blocks(fh: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """The text of ``fh`` in blocks, gunzipped when it is gzip (every member)."""
    first = fh.read(BLOCK)
    if not first.startswith(b"\x1f\x8b"):
        data = first
        while data:
            yield data, False
            data = fh.read(BLOCK)
        return
    raw = first
    dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while raw:
        out = dec.decompress(raw, BLOCK)
        while True:
            if out:
                yield out, True
            if not dec.unconsumed_tail:
                break
            out = dec.decompress(dec.unconsumed_tail, BLOCK)
        if dec.eof:  # a next member, or trailing garbage
            rest = dec.unused_data
            dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
            if rest:
                raw = rest
                continue
        raw = fh.read(BLOCK)
    tail = dec.flush()
    if tail:
        yield tail, True


def scan(
    source: Source,
    feed: Feed,
    busy: Callable[[], bool],
    markers: re.Pattern[bytes] | None = None,
    anywhere: tuple[bytes, ...] | None = LITERALS,
) -> ScanInfo:
    """Call ``feed(line_number, raw_line)`` (1-based numbers) for the lines that hold a
    marker (plus a few lines of context before each), and for every line while ``busy()``
    is true. Markers are the ``anywhere`` literals, or the ``markers`` regex when
    ``anywhere`` is None; either is searched in every block."""
    if anywhere is None and markers is None:
        raise ValueError("scan needs literals or a regex to look for")
    state = _State(feed, busy, markers, anywhere)
    if isinstance(source, Path):
        with open(source, "rb") as fh:
            return _run(state, fh)
    return _run(state, source)


def _run(state: _State, fh: BinaryIO) -> ScanInfo:
    size = 0
    last = b""
    carry = b""
    gz = False
    for data, compressed in _blocks(fh):
        gz = compressed
        size += len(data)
        last = data[-1:]
        buf = carry + data if carry else data
        cut = buf.rfind(b"\n")
        if cut == -1:
            if len(buf) <= MAX_LINE:
                carry = buf
                continue
            state.block(buf[:MAX_LINE] + b"\n")  # one endless line: keep its head
            state.cut += 1
            carry = b""
            continue
        state.block(buf[: cut + 1])
        carry = buf[cut + 1 :]
        if len(carry) > MAX_LINE:
            state.block(carry[:MAX_LINE] + b"\n")
            state.cut += 1
            carry = b""
    if carry:
        state.block(carry + b"\n")
    return ScanInfo(state.lineno, size, size > 0 and last != b"\n", state.cut, state.last_line, gz)


class _State:
    def __init__(
        self,
        feed: Feed,
        busy: Callable[[], bool],
        markers: re.Pattern[bytes] | None,
        anywhere: tuple[bytes, ...] | None,
    ) -> None:
        self.feed = feed
        self.busy = busy
        self.markers = markers
        self.anywhere = anywhere
        self.last_line = b""
        self.lineno = 0  # lines fully consumed before the current block
        self.cut = 0

    def block(self, block: bytes) -> None:
        """``block`` ends with a newline. Hand over what matters, count the rest."""
        pos, base, end = 0, self.lineno, len(block)
        feed, busy = self.feed, self.busy
        find = self._literals(block) if self.anywhere is not None else self._regex
        while pos < end:
            if not busy():
                at = find(block, pos)
                if at < 0:
                    break
                prev = block.rfind(b"\n", pos, at)
                ctx = prev + 1 if prev != -1 else pos
                for _ in range(CONTEXT):
                    if ctx <= pos:
                        break
                    prev = block.rfind(b"\n", pos, ctx - 1)
                    ctx = prev + 1 if prev != -1 else pos
                base += block.count(b"\n", pos, ctx)
                pos = ctx
            nl = block.find(b"\n", pos)
            base += 1
            line = block[pos:nl]
            feed(base, line if len(line) <= MAX_LINE else line[:MAX_LINE])
            pos = nl + 1
        self.lineno += block.count(b"\n")
        tail = block.rstrip()
        if tail:
            self.last_line = tail[tail.rfind(b"\n") + 1 :][:MAX_LINE]

    def _regex(self, block: bytes, pos: int) -> int:
        assert self.markers is not None
        m = self.markers.search(block, pos)
        return m.start() if m else -1

    def _literals(self, block: bytes) -> Callable[[bytes, int], int]:
        """The next hit of any literal at or after ``pos``: each literal's next position
        is remembered, and searched again only once ``pos`` has passed it."""
        assert self.anywhere is not None
        lits = self.anywhere
        nxt = [block.find(lit) for lit in lits]

        def find(_block: bytes, pos: int) -> int:
            best = -1
            for i, at in enumerate(nxt):
                if 0 <= at < pos:
                    at = nxt[i] = block.find(lits[i], pos)
                if at >= 0 and (best < 0 or at < best):
                    best = at
            return best

        return find
