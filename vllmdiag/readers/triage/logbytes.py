"""The bytes of a log as the line reader wants them: UTF-8, ``\\n`` line ends, no ANSI
escape sequences, whatever the capture did to them.

- A log redirected by PowerShell (``>``) or saved by a Windows editor is UTF-16: known by
  its byte-order mark, or without one by the pattern of NUL bytes in every other
  position; it is decoded on the fly.
- A log whose lines end in a bare ``\\r`` (an old Mac editor, a terminal capture of
  progress bars) would be one endless line: where the first block holds ``\\r`` and no
  ``\\n``, each ``\\r`` ends a line.
- ANSI escapes between every character (a colourising wrapper that styles each
  character) hide every marker the reader searches for: where escapes are that dense,
  sequences that start with ESC are dropped from the bytes before they are searched (a
  sequence split across two blocks is carried to the next one). Line numbers do not
  change.

What was done is said in :attr:`Normaliser.notes`, so a reader can report how it read
the log. Memory stays one block.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator

#: CSI (``ESC [ ... final``), OSC (``ESC ] ... BEL`` or ``ESC \\``) and two-byte escapes.
ESCAPES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)|[@-Z\\-_])")
#: A partial sequence at a block's end is at most this long (an OSC title can be long).
_HOLD = 4200
_SAMPLE = 4096
#: Escapes are dropped where there is more than one per ``_DENSE`` bytes of a window of
#: ``_WINDOW`` bytes (to a line end): a coloured logger prefix (two in a line of a hundred
#: bytes) hides nothing and is left to the line parser; one around every character
#: hides every marker.
_WINDOW = 1 << 16
_DENSE = 16


def utf16_kind(head: bytes) -> str | None:
    """``utf-16-le`` / ``utf-16-be`` (``utf-16`` with a BOM) when ``head`` looks like
    UTF-16 text, else None."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    sample = head[:_SAMPLE]
    if len(sample) < 8:
        return None
    even, odd = sample[0::2], sample[1::2]
    even_nul, odd_nul = even.count(0) / len(even), odd.count(0) / len(odd)
    if odd_nul > 0.4 and even_nul < 0.05:
        return "utf-16-le"
    if even_nul > 0.4 and odd_nul < 0.05:
        return "utf-16-be"
    return None


class Normaliser:
    """Wraps a stream of ``(block, compressed)`` pairs; see the module's docstring."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def blocks(self, source: Iterator[tuple[bytes, bool]]) -> Iterator[tuple[bytes, bool]]:
        decoder: codecs.IncrementalDecoder | None = None
        cr_only: bool | None = None  # decided on the first block with text
        held = b""
        first = True
        compressed = False
        for data, compressed in source:
            if first:
                first = False
                if data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
                kind = utf16_kind(data)
                if kind is not None:
                    decoder = codecs.getincrementaldecoder(kind)(errors="replace")
                    self.notes.append(f"read as {kind.upper()} text (a Windows redirection?)")
            if decoder is not None:
                data = decoder.decode(data).encode("utf-8", "replace")
            if not data:
                continue
            if cr_only is None:
                cr_only = b"\r" in data and b"\n" not in data
                if cr_only:
                    self.notes.append("lines end in a bare CR: each CR read as a line end")
            if cr_only:
                data = data.replace(b"\r", b"\n")
            if held:
                data, held = held + data, b""
            if b"\x1b" in data:
                data, held = self._strip(data)
            if data:
                yield data, compressed
        if decoder is not None:
            tail = decoder.decode(b"", final=True).encode("utf-8", "replace")
            held += tail.replace(b"\r", b"\n") if cr_only else tail
        if held:
            yield ESCAPES.sub(b"", held), compressed

    def _strip(self, data: bytes) -> tuple[bytes, bytes]:
        """``data`` without its escapes where they are dense, and the partial sequence
        it ends with (carried to the next block)."""
        last = data.rfind(b"\x1b", max(0, len(data) - _HOLD))
        keep = b""
        if last != -1 and ESCAPES.match(data, last) is None and b"\n" not in data[last:]:
            data, keep = data[:last], data[last:]
        parts: list[bytes] = []
        pos = 0
        dropped = False
        while pos < len(data):
            end = data.find(b"\n", pos + _WINDOW)
            end = len(data) if end == -1 else end + 1
            window = data[pos:end]
            if window.count(b"\x1b") * _DENSE > len(window):
                window = ESCAPES.sub(b"", window)
                dropped = True
            parts.append(window)
            pos = end
        if dropped and not any("ANSI" in n for n in self.notes):
            self.notes.append("ANSI escape sequences between the characters dropped")
        return b"".join(parts), keep
