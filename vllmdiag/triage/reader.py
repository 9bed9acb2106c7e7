"""Stream a log in blocks and hand only the lines that matter to a callback.

Most of a vLLM log is progress lines no triage needs. A block without a marker is
skipped with C-level searches and a newline count; inside a block, lines are handed over
one by one only from a marker on and for as long as the consumer says it is in the middle
of something (an open traceback). Memory stays flat: one block plus one carried partial
line, whatever the file size.

Where to look for what: a traceback can be anywhere, so its start is searched in every
block (a plain substring search, ~0.3 s/GiB). Everything else (signals, the version line,
a refused command line, the result line) sits at the start or the end of a run's log, so
the full marker regex (an alternation, ~10 s/GiB) runs only on the first and last
``EDGE`` bytes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BLOCK = 1 << 20
MAX_LINE = 1 << 16  # longer lines (binary garbage, a giant config dump) are cut here
CONTEXT = 3  # lines before a marker handed over too (the traceback's header)

MARKERS = re.compile(
    rb"Traceback \(most recent call last\)|Fatal Python error|Segmentation fault"
    rb"|Segfault encountered|core dumped|Killed|SIGKILL|SIGSEGV|SIGABRT|SIGBUS"
    rb"|terminated by signal|exitcode=-|exit code -?(?:9|11|6|134|137|139)\b"
    rb"|LLM engine \(v|API server version|vLLM version|Throughput: |Avg latency: "
    rb"|: error: "
)

#: Searched in every block: what can sit in the middle of a long log.
ANYWHERE = (b"Traceback (most recent call last)", b"Fatal Python error")
EDGE = 16 << 20

Feed = Callable[[int, bytes], None]


@dataclass(frozen=True)
class ScanInfo:
    lines: int
    size: int
    ends_mid_line: bool
    cut_lines: int
    last_line: bytes = b""  # the last non-blank line, where a log that just stops stopped


def scan(
    path: Path,
    feed: Feed,
    busy: Callable[[], bool],
    markers: re.Pattern[bytes] = MARKERS,
    anywhere: tuple[bytes, ...] | None = ANYWHERE,
) -> ScanInfo:
    """Call ``feed(line_number, raw_line)`` (1-based numbers) for the lines that hold a
    marker (plus a few lines of context before each), and for every line while ``busy()``
    is true. ``markers`` applies within ``EDGE`` bytes of either end; in between only the
    ``anywhere`` literals are searched (None: ``markers`` everywhere)."""
    state = _State(feed, busy, markers, anywhere)
    size = 0
    last = b""
    with open(path, "rb") as fh:
        total = os.fstat(fh.fileno()).st_size
        carry = b""
        while True:
            data = fh.read(BLOCK)
            if not data:
                break
            size += len(data)
            last = data[-1:]
            state.edge = size - len(data) - len(carry) < EDGE or size > total - EDGE
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
            state.edge = True
            state.block(carry + b"\n")
    return ScanInfo(state.lineno, size, size > 0 and last != b"\n", state.cut, state.last_line)


class _State:
    def __init__(
        self,
        feed: Feed,
        busy: Callable[[], bool],
        markers: re.Pattern[bytes],
        anywhere: tuple[bytes, ...] | None,
    ) -> None:
        self.feed = feed
        self.busy = busy
        self.markers = markers
        self.anywhere = anywhere
        self.edge = True
        self.last_line = b""
        self.lineno = 0  # lines fully consumed before the current block
        self.cut = 0

    def block(self, block: bytes) -> None:
        """``block`` ends with a newline. Hand over what matters, count the rest."""
        pos, base, end = 0, self.lineno, len(block)
        feed, busy = self.feed, self.busy
        find = self._regex if self.edge or self.anywhere is None else self._literals
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
        m = self.markers.search(block, pos)
        return m.start() if m else -1

    def _literals(self, block: bytes, pos: int) -> int:
        assert self.anywhere is not None
        hits = [i for i in (block.find(lit, pos) for lit in self.anywhere) if i >= 0]
        return min(hits) if hits else -1
