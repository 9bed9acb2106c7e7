"""A traceback as triage keeps it: frames, the links of an exception chain, and the
traceback with the process it came from."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

MAX_FRAMES = 40  # innermost frames kept per link
HEAD_LINKS = 8  # a chain keeps its first links (the original exception) ...
TAIL_LINKS = 8  # ... and its last ones; links in between are counted, not kept


@dataclass(frozen=True, slots=True)
class Frame:
    file: str
    line: int
    func: str


@dataclass(frozen=True)
class Link:
    """One exception of a traceback. ``relation``: None (first), ``cause``, ``context``
    or ``remote`` (the traceback a Ray task error carries). ``kind``: ``exception``,
    ``notice`` (V0's untyped "Exception in worker" text) or ``cut`` (the traceback
    stopped before its exception line; ``type`` is empty)."""

    type: str
    message: str
    frames: tuple[Frame, ...]
    start_line: int
    exc_line: int
    relation: str | None = None
    kind: str = "exception"
    head: str = ""  # the message's first line

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
    headless: bool = False  # its header was not in view
    dropped_links: int = 0
    header_error: bool = False  # the line above it was logged as an error, or printed raw
    header_line: int = 0  # where its header text is, when it came from the line above

    def key(self) -> tuple[object, ...]:
        """Identity for de-duplication: the logged and the raw copy of one traceback (the
        raw one has the multiprocessing frames on top, so compare the innermost)."""
        return (
            self.process,
            tuple((k.type, k.message, k.frames[-1].file if k.frames else "") for k in self.links),
        )


@dataclass
class OpenTraceback:
    """A traceback being read: the parser's state for one stream."""

    header: str
    level: str | None
    start: int
    last_seen: int
    record: str | None = None
    headless: bool = False
    relation: str | None = None
    links: list[Link] = field(default_factory=list)
    tail: deque[Link] = field(default_factory=lambda: deque(maxlen=TAIL_LINKS))
    dropped: int = 0
    frames: deque[Frame] = field(default_factory=lambda: deque(maxlen=MAX_FRAMES))
    state: str = "frames"  # frames | after | sep
    kind: str = "exception"
    exc_type: str = ""
    exc_lines: list[str] = field(default_factory=list)
    exc_line: int = 0
    blank: bool = False
    gapped: bool = False  # the message went on after one blank line (huggingface_hub's)
    #: the exception line held only its type: the message is the indented block below
    #: it, blank lines included (multiprocessing's ``RuntimeError: `` and its paragraphs)
    block: bool = False
    #: the exception line is its type alone, no colon (a bare ``raise AssertionError``):
    #: it has no message, and the lines after it are not one
    bare: bool = False
    noise: int = 0
    header_error: bool = False  # the header line was logged as an error (or printed raw)
    header_line: int = 0
    notice: Link | None = None  # V0's notice, kept while its traceback may give the type
    frame_indent: int = 0  # how far its last frame line is indented

    def close_link(self, kind: str | None = None) -> Link:
        link = Link(
            self.exc_type,
            " ".join(self.exc_lines).strip(),
            tuple(self.frames),
            self.start,
            self.exc_line,
            self.relation,
            kind or self.kind,
            self.exc_lines[0].strip() if self.exc_lines else "",
        )
        if len(self.links) < HEAD_LINKS:
            self.links.append(link)
        else:
            if len(self.tail) == TAIL_LINKS:
                self.dropped += 1
            self.tail.append(link)
        self.frames = deque(maxlen=MAX_FRAMES)
        self.exc_lines = []
        return link

    def all_links(self) -> tuple[Link, ...]:
        return (*self.links, *self.tail)
