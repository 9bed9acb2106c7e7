"""Stream a log in blocks and hand only the lines that matter to a callback.

Most of a vLLM log is progress lines no triage needs. Every block is searched for a few
literals that any fatal line contains (a traceback header, an exception or error word, a
death or signal notice): C-level substring searches, ~0.5 s/GiB each, anywhere in the
file, so a fatal line in the middle of a huge log is found. The version line is looked
for in the first ``EDGE`` bytes only and the benchmark's result line in the last (in
every block when the size is not known: a stream, a gzip'd file). Lines are handed over
from a hit on (with a few lines of context before it: the frames above an exception
line) and for as long as the consumer says it is in the middle of something. Memory
stays flat: one block plus one carried partial line, whatever the size.

The source is a path or a binary stream (standard input); gzip'd input is recognised by
its magic bytes and decompressed on the fly.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from vllmdiag.readers.triage.callers import LITERALS as CALLER_LITERALS
from vllmdiag.readers.triage.logbytes import Normaliser

BLOCK = 1 << 20
MAX_LINE = 1 << 16  # longer lines (binary garbage, a giant config dump) are cut here
CONTEXT = 6  # lines before a hit handed over too (a header, the frames above)

#: Substrings of every fatal line, searched in every block. Short on purpose: ``rror`` is
#: Error and error (``RROR`` an ERROR record), ``atal`` Fatal and fatal, ``illed`` Killed
#: and killed; vLLM's request-length message as a client relays it, a frame line (a stack
#: pasted without header or exception), the Chinese word for failed, Python's argument errors
#: (quoted in prose without their ``TypeError``), the marks rich and IPython put at the
#: line that raised (their frames are printed a few lines above it).
LITERALS: tuple[bytes, ...] = (
    b"Traceback (most recent call last)",
    b"rror",
    b"RROR",
    b"xception",
    b"died",
    b"illed",
    b"atchdog",
    b"atal",
    b"fault",
    b"SIG",
    b"llegal instruction",  # SIGILL as the shell reports it
    b"xitcode",  # torch elastic's ``failed (exitcode: -11)``
    b"(local_rank: ",  # and the rank of the child its report names
    b"maximum context length",
    b'File "',  # a frame: stack pasted without its header or exception line (or indent)
    "失败".encode(),  # "failed", in Chinese-language pastes
    "段错误".encode(),  # "Segmentation fault", as a shell in a Chinese locale reports it
    b"unexpected keyword",  # Python's argument errors, quoted without their type
    b"positional argument",
    b"keyword-only argument",
    b"marked dead",  # cluster managers: a Ray node lost, a pod evicted, a job cancelled
    b"low on resource",
    b"CANCELLED AT",
    b"Crashed container",  # a deployment harness's and kubelet's reports of a crashed pod
    b"Back-off restarting",
    b"invalid option",  # a shell refusing an option in a container's entrypoint script
    b"nrecognized option",
    b"access model",  # RAGFlow relaying its model call's error
    b" status code",  # the OpenAI JavaScript client's ``400 status code (no body)``, alone
    b"which is incompatible",  # pip's report of what an install broke, its header cut
    b"No solution found when resolving",  # uv's resolver
    # errors pasted without their type: vLLM's KV-cache check, a missing module, a
    # compiled extension's unresolved symbol, the end of Ray's out-of-memory report
    b"stored in KV cache",
    b"No module named",
    b"object has no attribute",
    b"object is not ",  # ``'NoneType' object is not iterable``, printed alone
    b"undefined symbol",
    b"out of memory issue",
    b"ailed to start",  # a serving wrapper giving up on the server it started
    b"Expired: ",  # subprocess's TimeoutExpired, whose name says no error
    b"does not allow any tokens",
    b"The actor is dead because",  # Ray's account of an actor's death, pasted alone
    b"Assertion `",  # a device kernel's assertion
    b'"message": "',  # an error body pretty-printed over lines
    b'message\\":',  # a body nested, escaped, in another's message
    "“message".encode(),  # a body whose quotes a paste made typographic
    b"'loc': (",  # one error of a server's validation list, as a client prints it
    "❱".encode(),  # rich's boxed traceback marks the line that raised (its frame is above)
    b"--> ",  # IPython's arrow at the line that raised (``----> 3``, ``--> 177``)
    b"Cell In[",  # IPython's frame of a notebook cell, and Colab's linked frames
    b"ipython-input",
)
#: vLLM's version line, and a wrapper's own line (the command it runs vLLM with)
HEAD_LITERALS: tuple[bytes, ...] = (
    b"engine (v",
    b"ersion",
    b"vllm-project/vllm/",  # a link to the vLLM change an error is about
    b"vllm==",  # the version a user wrote down
    *CALLER_LITERALS,
)
#: The end of a run: its results, the shell's "(core dumped)" after the process it ran
#: died, the exit status a harness notes, vLLM's progress bar over the prompts.
TAIL_LITERALS: tuple[bytes, ...] = (
    b"Throughput: ",
    b"Avg latency: ",
    b"dumped",
    b"xit code",
    b"Processed prompts:",  # LLM.generate's progress bar: whether every prompt finished
)
EDGE = 16 << 20
TAIL = 8  # the lines at the log's end that ScanInfo keeps

#: The same markers as one regex, for readers that want one.
MARKERS = re.compile(b"|".join(re.escape(lit) for lit in LITERALS + HEAD_LITERALS + TAIL_LITERALS))

Feed = Callable[[int, bytes], None]
Source = Path | BinaryIO


@dataclass(frozen=True)
class ScanInfo:
    lines: int
    size: int
    ends_mid_line: bool
    cut_lines: int
    compressed: bool = False
    #: How the bytes were read, where that was not plain UTF-8 text (see ``logbytes``),
    #: and a gzip stream that ends before its end.
    notes: tuple[str, ...] = ()
    #: the last ``TAIL`` non-blank lines, numbered: where a log that just stops stopped,
    #: and where a paste that is only an error's own words says what failed
    tail: tuple[tuple[int, bytes], ...] = ()

    @property
    def last_line(self) -> bytes:
        """The last non-blank line."""
        return self.tail[-1][1] if self.tail else b""


def _blocks(fh: BinaryIO, notes: list[str]) -> Iterator[tuple[bytes, bool]]:
    """The text of ``fh`` in blocks, gunzipped when it is gzip (every member). A gzip
    stream cut short (a copy that stopped, a log still being written) is read as far as
    it goes, and ``notes`` says so."""
    first = fh.read(BLOCK)
    if not first.startswith(b"\x1f\x8b"):
        data = first
        while data:
            yield data, False
            data = fh.read(BLOCK)
        return
    raw = first
    dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
    fed = False  # the current decompressor has had input (a member is under way)
    while raw:
        fed = True
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
            fed = False
            if rest:
                raw = rest
                continue
        raw = fh.read(BLOCK)
    tail = dec.flush()
    if tail:
        yield tail, True
    if fed and not dec.eof:
        notes.append("the gzip stream ends early (a truncated copy?): read as far as it goes")


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
        # Non-blocking open: a FIFO in a log's place (in a run directory too) is refused
        # here instead of waiting forever for a writer; a device is never read endlessly.
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file (a FIFO, a device?)", str(source))
            os.set_blocking(fd, True)
            return _run(state, fh, st.st_size)
    return _run(state, source, None)


def _run(state: _State, fh: BinaryIO, total: int | None) -> ScanInfo:
    """Hand ``state`` whole lines, block by block, without copying a block: the partial
    line a block ends with is carried into the next one."""
    size = 0
    last = b""
    carry = b""
    gz = False
    notes: list[str] = []
    normaliser = Normaliser()
    for data, compressed in normaliser.blocks(_blocks(fh, notes)):
        gz = compressed
        known = None if gz else total
        state.head = size - len(carry) < EDGE
        state.tail = known is None or size + len(data) > known - EDGE
        size += len(data)
        last = data[-1:]
        lo = 0
        if carry:
            nl = data.find(b"\n")
            if nl == -1:
                carry = _bounded(state, carry + data)
                continue
            joined = carry + data[: nl + 1]
            state.block(joined, 0, len(joined))
            lo, carry = nl + 1, b""
        cut = data.rfind(b"\n")
        if cut >= lo:
            state.block(data, lo, cut + 1)
            lo = cut + 1
        carry = _bounded(state, data[lo:])
    if carry:
        state.head, state.tail = size - len(carry) < EDGE, True
        carry += b"\n"
        state.block(carry, 0, len(carry))
    return ScanInfo(
        state.lineno,
        size,
        size > 0 and last != b"\n",
        state.cut,
        gz,
        tuple(normaliser.notes + notes),
        tuple(state.ending),
    )


def _bounded(state: _State, carry: bytes) -> bytes:
    """A partial line longer than ``MAX_LINE`` (binary garbage, one endless line) is
    handed over cut to its head; what follows it up to a newline starts a new line."""
    if len(carry) <= MAX_LINE:
        return carry
    head = carry[:MAX_LINE] + b"\n"
    state.block(head, 0, len(head))
    state.cut += 1
    return b""


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
        self.lineno = 0  # lines fully consumed before the current block
        self.cut = 0
        self.head = True  # the block lies within EDGE bytes of the start
        self.tail = True  # ... of the end (or the end is not known)
        #: the previous block's last lines that were not handed over: (number, line)
        self.pending: deque[tuple[int, bytes]] = deque(maxlen=CONTEXT)
        self.ending: deque[tuple[int, bytes]] = deque(maxlen=TAIL)

    def block(self, block: bytes, lo: int, hi: int) -> None:
        """``block[lo:hi]`` ends with a newline. Hand over what matters, count the rest."""
        pos, base, end = lo, self.lineno, hi
        feed, busy = self.feed, self.busy
        find = self._literals(block, hi) if self.anywhere is not None else self._regex(hi)
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
                if ctx == lo and self.pending:
                    self._carried(block.count(b"\n", lo, at))
                base += block.count(b"\n", pos, ctx)
                pos = ctx
            self.pending.clear()
            nl = block.find(b"\n", pos)
            base += 1
            line = block[pos:nl]
            feed(base, line if len(line) <= MAX_LINE else line[:MAX_LINE])
            pos = nl + 1
        self._keep_unfed(block, pos, hi, base)
        self.lineno += block.count(b"\n", lo, hi)
        self._ending(block, lo, hi)

    def _keep_unfed(self, block: bytes, pos: int, hi: int, base: int) -> None:
        """The last lines of the block that were not handed over, for the context of a
        hit at the very start of the next block (the last line of a file without a final
        newline comes as a block of its own)."""
        self.pending.clear()
        if pos >= hi:
            return
        start = hi
        lines: list[tuple[int, bytes]] = []
        total = base + block.count(b"\n", pos, hi)
        while len(lines) < CONTEXT and start > pos:
            prev = block.rfind(b"\n", pos, start - 1)
            begin = prev + 1 if prev != -1 else pos
            lines.append((total - len(lines), block[begin : start - 1][:MAX_LINE]))
            start = begin
        self.pending.extend(reversed(lines))

    def _carried(self, before: int) -> None:
        """Hand over the previous block's last unfed lines that are within the context
        of a hit ``before`` lines into this block."""
        room = CONTEXT - before
        keep = list(self.pending)[-room:] if room > 0 else []
        for number, line in keep:
            self.feed(number, line)
        self.pending.clear()

    def _ending(self, block: bytes, lo: int, hi: int) -> None:
        """Keep the block's last non-blank lines (numbered) in ``ending``: only the end
        of the block is looked at, however large it is."""
        found: list[tuple[int, bytes]] = []
        body_end = lo + len(block[lo:hi].rstrip())  # past a run of blank lines at the end
        if body_end == lo:
            return
        end = block.find(b"\n", body_end, hi)  # the newline ending the last non-blank line
        number = self.lineno - block.count(b"\n", end, hi) + 1
        steps = 0
        while end >= lo and len(found) < TAIL and steps < 4 * TAIL:
            nl = block.rfind(b"\n", lo, end)
            start = nl + 1 if nl >= 0 else lo
            text = block[start:end][:MAX_LINE]
            if text.strip():
                found.append((number, text))
            number, end, steps = number - 1, start - 1, steps + 1
        self.ending.extend(reversed(found))

    def _regex(self, hi: int) -> Callable[[bytes, int], int]:
        assert self.markers is not None
        markers = self.markers

        def find(block: bytes, pos: int) -> int:
            m = markers.search(block, pos, hi)
            return m.start() if m else -1

        return find

    def _literals(self, block: bytes, hi: int) -> Callable[[bytes, int], int]:
        """The next hit of any literal at or after ``pos``: each literal's next position
        is remembered, and searched again only once ``pos`` has passed it."""
        assert self.anywhere is not None
        lits = self.anywhere
        if self.anywhere is LITERALS:
            lits += (HEAD_LITERALS if self.head else ()) + (TAIL_LITERALS if self.tail else ())
        nxt = [-2] * len(lits)  # -2: not searched yet, -1: no more in this block

        def find(_block: bytes, pos: int) -> int:
            best = -1
            for i, at in enumerate(nxt):
                if at == -2 or 0 <= at < pos:
                    at = nxt[i] = block.find(lits[i], pos, hi)
                if at >= 0 and (best < 0 or at < best):
                    best = at
            return best

        return find
