"""Python tracebacks out of a stream of normalised lines, one parser state per stream.

A stream is a (process, logged-or-raw) pair: vLLM's ``logger.exception`` writes each
traceback line behind the logger prefix, while Python's own excepthook (``Process
EngineCore_DP0:`` ...) writes it raw, and several processes interleave line by line.
Chained exceptions (``The above exception was the direct cause ...`` / ``During handling
...``) become links of one traceback, in the order Python prints them (original first).
A Ray ``RayTaskError(X)`` carries the remote traceback inside it; that becomes a
``remote`` link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vllmdiag.triage.lines import Line

_TB_START = "Traceback (most recent call last):"
_FRAME = re.compile(r'^File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?')
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:\([\w.]+\))?)(?::(?: (?P<msg>.*))?)?$")
_CAUSE = "The above exception was the direct cause of the following exception"
_CONTEXT = "During handling of the above exception, another exception occurred"
_REMOTE = re.compile(r"RayTaskError\((?P<inner>[\w.]+)\)")

#: Lines of a stream that may pass before an open traceback is considered abandoned.
STALE_FRAMES = 5000
STALE_AFTER = 64
MAX_FRAMES = 200
MAX_MESSAGE_LINES = 20
MAX_TRACEBACKS = 5000
HEADER_WINDOW = 8


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    func: str


@dataclass(frozen=True)
class Link:
    """One exception of a traceback. ``relation``: None (first), ``cause``, ``context``
    or ``remote`` (the traceback a Ray task error carries)."""

    type: str
    message: str
    frames: tuple[Frame, ...]
    start_line: int
    exc_line: int
    relation: str | None = None

    @property
    def short_type(self) -> str:
        return self.type.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Traceback:
    process: str
    level: str | None
    header: str
    links: tuple[Link, ...]
    complete: bool
    first_line: int
    last_line: int

    def key(self) -> tuple[object, ...]:
        """Identity for de-duplication: the logged and the raw copy of one traceback (the
        raw one has the multiprocessing frames on top, so compare the innermost)."""
        return (
            self.process,
            tuple((k.type, k.message, k.frames[-1].file if k.frames else "") for k in self.links),
        )


@dataclass
class _Open:
    header: str
    level: str | None
    start: int
    last_seen: int
    relation: str | None = None
    links: list[Link] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    state: str = "frames"  # frames | after | sep
    exc_type: str = ""
    exc_lines: list[str] = field(default_factory=list)
    exc_line: int = 0
    blank: bool = False
    noise: int = 0

    def close_link(self) -> None:
        self.links.append(
            Link(
                self.exc_type,
                " ".join(self.exc_lines).strip(),
                tuple(self.frames),
                self.start,
                self.exc_line,
                self.relation,
            )
        )
        self.frames = []
        self.exc_lines = []


class TracebackParser:
    """Feed normalised lines in order; read :attr:`done` after :meth:`finish`."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, bool], _Open] = {}
        self.last_text: dict[tuple[str, bool], tuple[int, str]] = {}
        self.done: list[Traceback] = []
        self.dropped = 0
        self._fed = 0

    @property
    def has_open(self) -> bool:
        return bool(self.open)

    def feed(self, line: Line) -> None:
        key = (line.process, line.level is not None)
        text = line.text
        stripped = text.strip()
        st = self.open.get(key)
        self._fed += 1
        if self._fed % 256 == 0 and self.open:
            self._expire(line.number)
        if stripped.startswith(_TB_START):
            if st is not None and st.state == "sep":
                st.state, st.start, st.last_seen, st.blank = (
                    "frames",
                    line.number,
                    line.number,
                    False,
                )
                return
            if st is not None:
                self._finish(key, complete=st.state != "frames")
            seen, header = self.last_text.get(key, (0, ""))
            if seen < line.number - HEADER_WINDOW:
                header = ""  # not the line right above: the reader skipped what was between
            self.open[key] = _Open(header, line.level, line.number, line.number)
            return
        if st is None:
            if stripped:
                self.last_text[key] = (line.number, stripped)
            return
        st.last_seen = line.number
        if st.state == "frames":
            self._in_frames(st, key, line, text, stripped)
        elif st.state == "after":
            self._after(st, key, text, stripped, line.number)
        elif stripped.startswith((_CAUSE, _CONTEXT)) or not stripped:
            return
        else:
            self._finish(key, complete=True)
            self.last_text[key] = (line.number, stripped)

    def _in_frames(
        self, st: _Open, key: tuple[str, bool], line: Line, text: str, stripped: str
    ) -> None:
        if text[:1] in (" ", "\t") or not stripped or stripped.startswith("[Previous line"):
            m = _FRAME.match(stripped)
            if m and len(st.frames) < MAX_FRAMES:
                st.frames.append(Frame(m["file"], int(m["line"]), (m["func"] or "").strip()))
            return
        m = _EXC.match(stripped)
        if m is None:
            st.noise += 1  # a stray line of the same stream; give up after a while
            if st.noise > 50:
                self._finish(key, complete=False)
            return
        st.exc_type, st.exc_line = m["type"], line.number
        st.exc_lines = [m["msg"] or ""]
        remote = _REMOTE.search(m["type"])
        if remote:  # Ray prints the remote traceback right below, indented
            st.close_link()
            st.relation, st.start = "remote", line.number
            return
        st.state, st.blank = "after", False

    def _after(
        self, st: _Open, key: tuple[str, bool], text: str, stripped: str, line_number: int
    ) -> None:
        if not stripped:
            st.blank = True
            return
        if stripped.startswith(_CAUSE) or stripped.startswith(_CONTEXT):
            st.close_link()
            st.relation = "cause" if stripped.startswith(_CAUSE) else "context"
            st.state = "sep"
            return
        if text[:1] in (" ", "\t") and not st.blank:
            if len(st.exc_lines) < MAX_MESSAGE_LINES:
                st.exc_lines.append(stripped)
            return
        self._finish(key, complete=True)
        self.last_text[key] = (line_number, stripped)

    def _finish(self, key: tuple[str, bool], *, complete: bool) -> None:
        st = self.open.pop(key)
        if st.state == "after":
            st.close_link()
        elif st.state == "frames":
            complete = False  # the stream stopped before the exception line
            if st.frames or not st.links:
                st.exc_type, st.exc_lines, st.exc_line = "", [], st.last_seen
                st.close_link()
        if len(self.done) >= MAX_TRACEBACKS:
            self.dropped += 1
            return
        self.done.append(
            Traceback(
                process=key[0],
                level=st.level,
                header=st.header,
                links=tuple(st.links),
                complete=complete,
                first_line=st.links[0].start_line,
                last_line=max(st.last_seen, st.links[-1].exc_line),
            )
        )

    def _expire(self, now: int) -> None:
        for key, st in list(self.open.items()):
            idle = now - st.last_seen
            if st.state == "frames" and idle > STALE_FRAMES:
                self._finish(key, complete=False)
            elif st.state != "frames" and idle > STALE_AFTER:
                self._finish(key, complete=True)

    def finish(self) -> list[Traceback]:
        """Close whatever is still open (the log ended) and return every traceback."""
        for key in list(self.open):
            st = self.open[key]
            self._finish(key, complete=st.state != "frames")
        return self.done
