"""Python tracebacks out of a stream of normalised lines, one parser state per stream.

A stream is a (process, logged-or-raw) pair: vLLM's logger writes each traceback line
behind its prefix, Python's excepthook writes it raw, and processes interleave.

What users paste is rarely whole, so the parser takes what is in view:
- a traceback with its ``Traceback (most recent call last):`` header (also at the end of
  a line: ``EngineCore hit an exception: Traceback ...``, V0's ``<message>, Traceback``);
- an exception line whose header is not in view (the paste starts inside the traceback):
  a *headless* traceback, with the frames just above it where they are in view;
- V0's ``Exception in worker X while processing method M: <message>`` notice;
- chained exceptions (``The above exception was the direct cause ...``) as links of one
  traceback, original first, and Ray's ``RayTaskError(X)`` remote traceback;
- multi-line messages: indented lines, and unindented lines of the same log record
  (NCCL's ``Last error:`` and the line after it), until a blank line (or a shell's
  prompt the paste kept after the error);
- frames as other printers write them: IPython's (``File /x.py:177, in f(..)``, ``Cell
  In[3], line 1``, the older ``/x.py in f(..)``) and rich's boxed traceback (``│
  /x.py:407 in f │``, a path the box wrapped over two lines joined again).

Memory is bounded whatever the log: frames per link, links per chain (the first and the
last are kept), message lines, and distinct tracebacks.
"""

from __future__ import annotations

import re
from collections import deque

from vllmdiag.readers.triage.lines import MAIN, Line, is_error_record
from vllmdiag.readers.triage.traceback_model import (
    MAX_FRAMES,
    Frame,
    Link,
    OpenTraceback,
    Traceback,
)

__all__ = ["Frame", "Link", "Traceback", "TracebackParser"]

#: The stream of untagged raw output.
_RAW_MAIN = (MAIN, False)

_TB_START = "Traceback (most recent call last):"
#: A user's number before a traceback's header, listing the errors of several runs
#: (``1.Traceback ..``, then ``2.Traceback ..``).
LISTED = re.compile(r"^\d{1,2}[.)]$")
#: IPython's header: the exception's type, then ``Traceback (most recent call last)``
#: without the colon, right-aligned under a rule of dashes.
_IPYTHON_START = "Traceback (most recent call last)"
_IPYTHON_HEAD = re.compile(r"^[A-Za-z_][\w.]*\s{2,}Traceback \(most recent call last\)$")
_FRAME = re.compile(r'^File [“"](?P<file>[^"”]+)[”"], line (?P<line>\d+)(?:,? in (?P<func>.+))?')
#: A frame whose line number and function the paste lost (text read back from a photo):
#: its file alone, in quotes, a Python file.
_BARE_FRAME = re.compile(r'^File [“"](?P<file>[^"”]+\.py)[”"]$')
#: The same with its function but neither ``File`` nor the line number
#: (``vllm/v1/core/sched/scheduler.py, in schedule``).
_NAMED_FRAME = re.compile(r"^(?P<file>[\w./-]+\.py), in (?P<func>[\w<>.]+)$")
#: A frame whose ``File`` the paste cut off (``vllm/model_executor/models/registry.py",
#: line 416, in inspect_model_cls``, or with its opening quote: ``"/usr/../x.py", line ..``).
_CUT_FRAME = re.compile(r'^"?(?P<file>[\w./-]+\.py)", line (?P<line>\d+), in (?P<func>[\w<>.]+)$')
#: IPython's frames (``File /x.py:177, in LLM.__init__(self, ..)``, ``Cell In[3], line
#: 1``; IPython 7's ``/x.py in __init__(self, ..)``, ``<ipython-input-2-ab> in <module>``)
#: and rich's (``/x.py:407 in _loglikelihood_tokens``, the box already peeled); Colab's
#: IPython links the file (``[/tmp/ipython-input-7.py](https://..) in <cell line: 0>()``).
_OTHER_FRAME = re.compile(
    r"^(?:File (?P<ifile>\S+\.pyx?):(?P<iline>\d+), in (?P<ifunc>[\w.<>]+)(?:\(.*)?"
    r"|\[(?P<mfile>[^\]\s]+\.pyx?)\]\([^)\s]*\) in (?P<mfunc><cell line: \d+>|[\w.<>]+)(?:\(.*)?"
    r"|(?P<cell>Cell In\[\d+\]), line (?P<cline>\d+)"
    r"|(?P<ofile>/\S+\.pyx?|<ipython-input-[\w-]+>) in (?P<ofunc>[\w<>]+)(?:\(.*)?"
    r"|(?P<rfile>[^\s:│]+\.pyx?):(?P<rline>\d+) in (?P<rfunc>[\w<>.]+))$"
)
#: A piece of a path that a box wrapped (the rest, with ``:line in func``, is next).
_PATH_PIECE = re.compile(r"^[^\s:│]*/[^\s:│]*$")
#: A statement that raises, unindented (``assert x > 0``, ``raise ValueError(``).
_STATEMENT = re.compile(r"^(?:assert|raise) \S")
#: IPython's arrow at the line that raised (``----> 3 llm = LLM(..)``).
_ARROW = re.compile(r"^-+> ?\d+ ")
#: An exception line: its type (a C++ one namespaced: ``c10::AcceleratorError``), then its
#: message after a colon (a paste may have put a space before the colon: ``ValueError :``).
_EXC = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:::[A-Za-z_]\w*)*(?:\([\w.]+\))?)"
    # a code span's closing backtick a paste left after a bare type (``AssertionError` ``)
    r"(?:`(?=$)|(?: ?:(?: (?P<msg>.*))?)?)$"
)
#: Type names an exception line is recognised by without its header or frames in view.
_EXC_NAME = re.compile(
    r"[A-Za-z](?:Error|Exception|Interrupt|Exit|Failure|Failed|Timeout|Expired|Unsupported)"
    r"(?:\([\w.]+\))?$|^Exception$"
    # Triton's exception for a kernel the GPU cannot hold, whose name says no error
    r"|^OutOfResources$"
)
_NOTICE = re.compile(
    r"^Exception in worker (?P<proc>\S+) while processing method \w+: (?P<msg>.+)$"
)
_CAUSE = "The above exception was the direct cause of the following exception"
_CONTEXT = "During handling of the above exception, another exception occurred"
#: Ray's task error: the remote traceback is printed right below it (typed as
#: ``RayTaskError(ValueError)``, or plain when Ray could not subclass the cause).
_REMOTE = re.compile(r"RayTaskError(?:\((?P<inner>[\w.]+)\))?$")
#: Ray's actor death from its creation task: the task's traceback follows, as for a
#: task error (``ActorDiedError: The actor died because of an error raised in its
#: creation task, ray::LLMRayActor.__init__() (pid=..)``).
_CREATION = "error raised in its creation task"
#: Ray's report of a task error no one waited for: the task's traceback follows.
_UNHANDLED = re.compile(
    r"^Unhandled error \(suppress with '?RAY_IGNORE_UNHANDLED_ERRORS=1'?\): (?P<msg>ray::.+)$"
)
#: Exceptions whose message has a blank line inside (huggingface_hub's HTTP errors:
#: ``401 Client Error. (Request ID: ..)``, a blank line, then what was not found).
_GAPPED = re.compile(
    r"(?:RepositoryNotFound|GatedRepo|RevisionNotFound|EntryNotFound|HfHubHTTP)Error$"
)
#: Unindented lines that start something new, never a message's continuation.
#: Also a paste's elision mark (``...``) and a process tag the paste cut (``(pi``).
_NEW = re.compile(
    r"^(?:Process [\w-]+:$|Killed$|Aborted|Segmentation fault|Fatal Python error"
    r"|Exception in thread|Exception ignored in|Current thread|Stack \(most recent"
    # JAX's note under an exception whose internal frames it filtered, and its rule
    r"|-{8,}$|For simplicity, JAX has removed its internal frames"
    r"|(?:\.{3,}|…|\[\.\.\.\])$|\([\w -]*$"
    r"|Process finished with exit code"  # an IDE's note that the run ended
    r"|error: subprocess-exited-with-error"  # pip's note under a build step's output
    r"|(?:\([\w.-]+\) )*[\w.-]+@[\w.-]+:\S*[#$%] ?"  # a shell's prompt after the error
    r"|(?:->|→|=>) \S)"  # a user's arrow to what came of it (``-> ..EngineDeadError``)
)

#: A message line a paste broke mid-word: it ends inside a word or number, and the next
#: line starts with the rest of it (lower case, a digit, or a hyphen).
_BROKEN_OFF = re.compile(r"[\w-]$")
_BROKEN_ON = re.compile(r"^[a-z0-9_-]")
#: Lines of a stream that may pass before an open traceback is considered abandoned.
STALE_FRAMES = 5000
STALE_AFTER = 64
MAX_MESSAGE_LINES = 20
MAX_TRACEBACKS = 5000
MAX_STREAMS = 4096
HEADER_WINDOW = 8


class TracebackParser:
    """Feed normalised lines in order; read :attr:`done` after :meth:`finish`."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, bool], OpenTraceback] = {}
        self.last_text: dict[tuple[str, bool], tuple[int, str]] = {}
        self.orphans: dict[tuple[str, bool], deque[Frame]] = {}
        self.traceish: dict[tuple[str, bool], int] = {}  # last frame/code line per stream
        self.last_error: dict[tuple[str, bool], bool] = {}  # was last_text logged as an error
        # the error message right above a stream's orphan frames (a paste that puts the
        # message first, then the stack, without header or exception line)
        self.above: dict[tuple[str, bool], tuple[int, str]] = {}
        self.done: list[Traceback] = []
        self.seen: set[tuple[object, ...]] = set()
        #: a path piece a box wrapped, per stream: (line, text), joined to the next frame
        self.piece: dict[tuple[str, bool], tuple[int, str]] = {}
        #: where each stream's orphan frames began, and how far their ``File`` lines are
        #: indented
        self.orphan_start: dict[tuple[str, bool], int] = {}
        self.orphan_indent: dict[tuple[str, bool], int] = {}
        self.dropped = 0
        self._fed = 0
        #: a tagged stream whose traceback header the paste kept its tag on while its
        #: frames and exception line below lost it: the untagged lines go on with it
        self.adopted: tuple[str, bool] | None = None

    @property
    def has_open(self) -> bool:
        return bool(self.open)

    def feed(self, line: Line) -> bool:
        """Take one line; True when it belongs to a traceback (frame, message, chain)."""
        key = (line.process, line.level is not None)
        stripped = line.text.strip()
        if key == _RAW_MAIN and self.adopted is not None:
            if self.adopted in self.open:
                key = self.adopted
            else:
                self.adopted = None
        st = self.open.get(key)
        if st is None and key == _RAW_MAIN and stripped.startswith('File "'):
            adopted = self._header_above(line.number)
            if adopted is not None:
                self.adopted = key = adopted
                st = self.open[key]
        if st is None and line.process != MAIN and line.text[:1] in (" ", "\t"):
            st = self._retagged(key, line)
        if st is None and key == _RAW_MAIN and line.record is None and self._wrapped(line):
            return True
        self._fed += 1
        if self._fed % 256 == 0 and self.open:
            self._expire(line.number)
        if stripped.endswith(_TB_START):
            self._start(key, line, stripped[: -len(_TB_START)].rstrip(" ,"), st)
            return True
        if stripped.endswith(_IPYTHON_START) and _IPYTHON_HEAD.match(stripped):
            self._start(key, line, "", st)  # its first word is the exception's type
            return True
        if st is None:
            return self._outside(key, line, stripped)
        st.last_seen = line.number
        if st.state == "frames":
            self._in_frames(st, key, line, stripped)
        elif st.state == "after":
            return self._after(st, key, line, stripped)
        elif not (stripped.startswith((_CAUSE, _CONTEXT)) or not stripped):
            self._finish(key, complete=True)
            return self._outside(key, line, stripped)
        return True

    def _header_above(self, number: int) -> tuple[str, bool] | None:
        """The tagged stream whose traceback header is right above an untagged first frame
        (the paste kept the tag on the header alone), where exactly one such is open."""
        keys = [
            k
            for k, st in self.open.items()
            if k[0] != MAIN and st.state == "frames" and not st.frames and st.start >= number - 1
        ]
        return keys[0] if len(keys) == 1 else None

    def _wrapped(self, line: Line) -> bool:
        """An untagged line that goes on with the message of a tagged process's exception
        right above it, which a paste broke in two mid-word (``.. engine ID mismatch.
        Expected 46126a31-6b81`` / ``-435d-a116-..,received 96b1c4ff-..``): appended to
        that message."""
        stripped = line.text.strip()
        if not stripped or not _BROKEN_ON.match(stripped) or _NEW.match(stripped):
            return False
        for key, st in self.open.items():
            if (
                key[0] != MAIN
                and st.state == "after"
                and st.last_seen == line.number - 1
                and st.exc_lines
                and _BROKEN_OFF.search(st.exc_lines[-1])
                and len(st.exc_lines) < MAX_MESSAGE_LINES
            ):
                st.exc_lines[-1] += stripped
                st.last_seen = line.number
                return True
        return False

    def _retagged(self, key: tuple[str, bool], line: Line) -> OpenTraceback | None:
        """An exception line without a process tag, right above an indented line of its
        message that has one: the paste cut the tag off the exception line (the message
        goes on under the process's tag), so the exception is that process's."""
        untagged = _RAW_MAIN
        st = self.open.get(untagged)
        if st is None or st.state != "after" or st.exc_line != line.number - 1 or st.frames:
            return None
        self.open[key] = self.open.pop(untagged)
        return st

    def _start(
        self, key: tuple[str, bool], line: Line, head: str, st: OpenTraceback | None
    ) -> None:
        if st is not None and st.state == "sep" and not head:
            st.state, st.start, st.last_seen, st.blank = "frames", line.number, line.number, False
            return
        notice = None
        introduced = ""
        if st is not None:
            if (
                st.state == "after"
                and head
                and not LISTED.match(head)
                and self._continues(st, line, head)
            ):
                st.exc_lines.append(head)  # V0: "<message>, Traceback (most recent ...)"
                head = ""
            elif st.state == "after" and not head and _introduces_next(st, line):
                # the record logged right above this traceback (``logger.exception``'s
                # message) is its header, not the previous exception's message
                introduced = st.exc_lines.pop()
            if st.state == "after" and st.kind == "notice":
                notice = st.close_link()
                st.links.pop()
                del self.open[key]
            else:
                self._finish(key, complete=st.state != "frames")
        error = False
        if not head:
            # the line right above in this stream; for a raw traceback, also a logged one
            # (Python's logging writes the traceback below its record without a prefix)
            alt = (key[0], True)
            seen, head = self.last_text.get(key, (0, ""))
            if not key[1] and self.last_text.get(alt, (0, ""))[0] > seen:
                key_above = alt
                seen, head = self.last_text[alt]
            else:
                key_above = key
            if seen < line.number - HEADER_WINDOW:
                head = ""  # not the line right above: the reader skipped what was between
            # the error it states: only the record right above (a gap of one line: the
            # indented tail of a multi-line message)
            near = seen >= line.number - 2
            error = bool(head) and near and self.last_error.get(key_above, False)
        if introduced:
            head, error, seen = introduced, True, line.number - 1
        self.open[key] = OpenTraceback(
            head, line.level, line.number, line.number, line.record, notice=notice
        )
        self.open[key].header_error = error
        self.open[key].header_line = seen if error else 0

    def _outside(self, key: tuple[str, bool], line: Line, stripped: str) -> bool:
        """A line of a stream with no open traceback: orphan frames, a headless
        exception line, V0's notice, or plain text."""
        if len(self.orphans) > MAX_STREAMS:
            self.orphans.clear()
            self.traceish.clear()
            self.last_text.clear()
            self.last_error.clear()
            self.above.clear()
            self.piece.clear()
            self.orphan_start.clear()
            self.orphan_indent.clear()
        if not self.orphans.get(key):
            self._untagged_below(key, line, stripped)
        frame = self._frame_of(key, line, stripped)
        if frame is not None:
            # how deep the frames are indented: the last one's (a paste's first line may
            # have lost the indent the rest keep)
            self.orphan_indent[key] = len(line.text) - len(line.text.lstrip())
            if not self.orphans.get(key):
                self.orphan_start[key] = line.number
                seen, text = self.last_text.get(key, (0, ""))
                if seen == line.number - 1 and self.last_error.get(key, False):
                    self.above[key] = (seen, text)
            self.orphans.setdefault(key, deque(maxlen=MAX_FRAMES)).append(frame)
            self.traceish[key] = line.number
            return False
        if _ARROW.match(stripped):
            self.traceish[key] = line.number  # IPython's arrow at a source line
            return False
        if _STATEMENT.match(line.text):
            # the source line that raised, its indent lost with the paste (``assert
            # all(..)`` above a bare ``AssertionError``)
            self.traceish[key] = line.number
            return False
        indented = line.text[:1] in (" ", "\t")
        near = self.traceish.get(key, -9) >= line.number - 2
        if indented:
            m = _EXC.match(stripped)
            # its type alone, the message on the lines below (``RuntimeError:``)
            alone = m is not None and m["msg"] is None and stripped.endswith(":")
            named = (
                m is not None
                and (bool(m["msg"]) or alone)
                and _EXC_NAME.search(m["type"].rsplit(".", 1)[-1])
            )
            indent = len(line.text) - len(line.text.lstrip())
            framed = bool(self.orphans.get(key)) and indent <= self.orphan_indent.get(key, -1)
            # an exception's name alone right under the frames' source (``AssertionError``
            # under ``assert ..``), indented as the source is
            bare = near and bool(self.orphans.get(key)) and bool(_BARE_NAMED.match(stripped))
            if m and ((named and (not near or framed)) or bare):
                # an exception line a paste indented (a quote block): with no frame near,
                # or no deeper than the orphan frames above it (the whole paste indented)
                self._headless(key, line, m["type"], m["msg"] or "", near, "exception")
                if alone:
                    self.open[key].exc_lines = []
                    self.open[key].block = True
                return True
        if not stripped or indented or stripped[:1] in "^~":
            if stripped:
                self.traceish[key] = line.number  # source line or carets under it
            return False
        m = _EXC.match(stripped)
        if near and self.orphans.get(key) and not (m and _exception_like(m["type"], near)):
            # the source line under an orphan frame, the indent lost with the paste's
            self.traceish[key] = line.number
            return False
        typed_alone = m is not None and m["msg"] is None and stripped.endswith(":")
        if m and (m["msg"] is not None or near or typed_alone) and _exception_like(m["type"], near):
            self._headless(key, line, m["type"], m["msg"] or "", near, "exception")
            if typed_alone:
                # its message is on the lines below (``ImportError:``, then the message)
                self.open[key].exc_lines = []
                self.open[key].block = True
            return True
        u = _UNHANDLED.match(stripped)
        if u:  # the relaying process names the task that failed: read it as Ray's relay
            self._headless(key, line, "ray.exceptions.RayTaskError", u["msg"], near, "exception")
            return True
        n = _NOTICE.match(stripped)
        if n:
            self._headless(key, line, "", n["msg"], near, "notice")
            return True
        self._orphaned(key)
        self.last_text[key] = (line.number, stripped)
        # an error record, or raw output (what Python's excepthook and print write)
        self.last_error[key] = is_error_record(line) or (line.level is None and not line.record)
        return False

    def _untagged_below(self, key: tuple[str, bool], line: Line, stripped: str) -> None:
        """An exception line right below frames that a paste gave a prefix it did not give
        the exception line, or the other way round (vLLM's ``ERROR .. engine.py:380]`` on
        the frames and not on the line that ends them; an untagged ``File`` line above
        ``[rank0]:`` source and exception lines): those frames become this stream's, so
        they own the exception. One of the two is untagged: tagged processes interleave."""
        m = _EXC.match(stripped)
        if m is None or not m["msg"] or not _EXC_NAME.search(m["type"].rsplit(".", 1)[-1]):
            return
        for other, frames in list(self.orphans.items()):
            near = self.traceish.get(other, -9) >= line.number - 2
            if frames and other != key and near and MAIN in (key[0], other[0]):
                self.orphans[key] = self.orphans.pop(other)
                self.orphan_start[key] = self.orphan_start.pop(other, line.number)
                self.orphan_indent[key] = self.orphan_indent.pop(other, 0)
                self.traceish[key] = self.traceish.pop(other)
                return

    def _orphaned(self, key: tuple[str, bool]) -> None:
        """The stream's orphan frames end without an exception line: when an error
        message was right above them, they are its traceback, cut (headless); otherwise,
        two frames or more, a traceback cut at both ends (an error quoted apart from its
        frames may own them)."""
        frames = self.orphans.pop(key, None)
        above = self.above.pop(key, None)
        start = self.orphan_start.pop(key, 0)
        if frames and above is None and len(frames) >= 2:
            cut = Link("", "", tuple(frames), start, start, kind="cut")
            last = self.traceish.get(key, start)
            tb = Traceback(key[0], None, "", (cut,), False, start, max(last, start), True)
            self._emit(tb)
        if frames and above is not None:
            n, text = above
            cut = Link("", "", tuple(frames), n, n, kind="cut")
            last = self.traceish.get(key, n)
            self._emit(
                Traceback(
                    process=key[0],
                    level=None,
                    header=text,
                    links=(cut,),
                    complete=False,
                    first_line=n,
                    last_line=last,
                    headless=True,
                    header_error=True,
                    header_line=n,
                )
            )

    def _headless(
        self, key: tuple[str, bool], line: Line, typ: str, msg: str, near: bool, kind: str
    ) -> None:
        self.above.pop(key, None)
        frames = self.orphans.pop(key, None)
        if not frames and not near:
            frames = self._untagged_frames_above(key, line)
            near = bool(frames)
        st = OpenTraceback("", line.level, line.number, line.number, line.record, headless=True)
        if near and frames:
            st.frames = frames
        st.exc_type, st.exc_lines, st.exc_line, st.kind = typ, [msg], line.number, kind
        st.state = "after"
        # the type alone, no colon (a bare ``AssertionError``): no message to go on
        st.bare = not msg and kind == "exception" and not line.text.rstrip().endswith(":")
        self.open[key] = st
        remote = _REMOTE.search(typ) or (typ.endswith("ActorDiedError") and _CREATION in msg)
        if remote:
            st.close_link()
            st.relation, st.state = "remote", "frames"

    def _untagged_frames_above(self, key: tuple[str, bool], line: Line) -> deque[Frame] | None:
        """Frames printed without any prefix right above an exception line that has a
        process tag (a paste, or a capture, that kept the tag on the exception line
        alone): that exception's own stack."""
        raw = _RAW_MAIN
        if key[0] == MAIN or not self.orphans.get(raw):
            return None
        if self.traceish.get(raw, -9) < line.number - 2:
            return None
        self.above.pop(raw, None)
        self.orphan_start.pop(raw, None)
        return self.orphans.pop(raw)

    def _frame_of(self, key: tuple[str, bool], line: Line, stripped: str) -> Frame | None:
        """The frame ``stripped`` is, as Python, IPython or rich prints one (a path
        piece the line above left is joined to it), or None."""
        fm = _FRAME.match(stripped)
        if fm:
            return _frame(fm)
        bare = _BARE_FRAME.match(stripped)
        if bare:
            return Frame(bare["file"].strip(), 0, "")
        named = _NAMED_FRAME.match(stripped) if ".py, in " in stripped else None
        if named:
            return Frame(named["file"], 0, named["func"])
        cut = _CUT_FRAME.match(stripped) if '.py", line ' in stripped else None
        if cut:
            return Frame(cut["file"], int(cut["line"]), cut["func"])
        om = _OTHER_FRAME.match(stripped) if stripped[:1] in "FC/<[" or ".py" in stripped else None
        if om is None:
            if _PATH_PIECE.match(stripped):
                self.piece[key] = (line.number, stripped)
            return None
        if om["ifile"]:
            return Frame(om["ifile"], int(om["iline"]), om["ifunc"])
        if om["cell"]:
            return Frame(f"<{om['cell']}>", int(om["cline"]), "<module>")
        if om["mfile"]:
            func = "<module>" if om["mfunc"].startswith("<cell") else om["mfunc"]
            return Frame(om["mfile"], 0, func)
        if om["ofile"]:
            return Frame(om["ofile"], 0, om["ofunc"])
        file = om["rfile"]
        piece = self.piece.pop(key, None)
        if piece is not None and piece[0] == line.number - 1:
            file = piece[1] + file
        return Frame(file, int(om["rline"]), om["rfunc"])

    def _in_frames(
        self, st: OpenTraceback, key: tuple[str, bool], line: Line, stripped: str
    ) -> None:
        text = line.text
        frame = self._frame_of(key, line, stripped)
        indent = len(text) - len(text.lstrip())
        if frame is not None:  # indented, or a paste (a relaying prefix) that lost the indent
            st.frames.append(frame)
            st.frame_indent = indent
            return
        if (
            (
                text[:1] in (" ", "\t")
                and not _outdented_exception(st, indent, stripped)
                and not _BARE_NAMED.match(stripped)
            )
            or not stripped
            or stripped.startswith(("[Previous line", "^"))
            or _ARROW.match(stripped)
        ):
            return
        m = _EXC.match(stripped)
        if m is not None and m["msg"] is None and not _exception_like(m["type"], True):
            m = None  # a source line that lost its indent (``x.update(self.args.)``)
        if m is None:
            st.noise += 1  # a stray line of the same stream; give up after a while
            if st.noise > 50:
                self._finish(key, complete=False)
            return
        st.exc_type, st.exc_line, st.kind = m["type"], line.number, "exception"
        st.exc_lines = [m["msg"] or ""]
        st.record = line.record
        st.bare = m["msg"] is None and not stripped.endswith(":")
        creation = m["type"].endswith("ActorDiedError") and _CREATION in (m["msg"] or "")
        if _REMOTE.search(m["type"]) or creation:  # Ray prints the remote traceback below
            st.close_link()
            st.relation, st.start = "remote", line.number
            return
        st.state, st.blank = "after", False

    def _continues(self, st: OpenTraceback, line: Line, stripped: str) -> bool:
        """An unindented line that continues the exception's message: same record (raw
        output, or the same vLLM log record), no blank line before it."""
        short = st.exc_type.rsplit(".", 1)[-1]
        return (
            not st.bare
            and not st.blank
            and line.record == st.record
            and len(st.exc_lines) < MAX_MESSAGE_LINES
            and _NEW.match(stripped) is None
            # a line that names the exception again is another process relaying it
            # (``Runner failed with exception: ModuleNotFoundError(..)``), not its message
            and not (short and (f"{short}(" in stripped or f"{short}: " in stripped))
            and not _another_exception(stripped)
        )

    def _after(self, st: OpenTraceback, key: tuple[str, bool], line: Line, stripped: str) -> bool:
        if not stripped:
            st.blank = True
            return True
        if stripped.startswith((_CAUSE, _CONTEXT)):
            st.close_link()
            st.relation = "cause" if stripped.startswith(_CAUSE) else "context"
            st.state = "sep"
            return True
        indented = line.text[:1] in (" ", "\t")
        if st.blank and not st.gapped and not indented and _GAPPED.search(st.exc_type):
            st.blank, st.gapped = False, True  # the rest of huggingface_hub's message
        if stripped in ("...", "…"):
            return True  # the paste's elision mark
        place = _PYTEST_PLACE.match(stripped)
        if place and not st.frames and place["type"] == st.exc_type.rsplit(".", 1)[-1]:
            # pytest's place of the error under its ``E`` lines: the frame that raised
            st.frames.append(Frame(place["file"], int(place["line"]), ""))
            return True
        if indented and not st.block and _FRAME.match(stripped):
            # a frame under an exception line starts another traceback (a paste that cut
            # its header), never the exception's message
            self._finish(key, complete=True)
            return self._outside(key, line, stripped)
        if st.block and not st.exc_lines and not indented and _NEW.match(stripped) is None:
            st.exc_lines.append(stripped)  # the message, on the line below its type
            return True
        if indented and not st.frames and not st.block and _another_exception(stripped):
            # an exception line under one quoted without frames (the error, then a
            # process's relay of it): another error, not this one's message
            self._finish(key, complete=True)
            return self._outside(key, line, stripped)
        if indented and not st.block and _NEW.match(stripped):
            # what starts something new, in a paste that indented every line
            self._finish(key, complete=True)
            return self._outside(key, line, stripped)
        if (indented and (not st.blank or st.block)) or (
            not indented and self._continues(st, line, stripped)
        ):
            if len(st.exc_lines) < MAX_MESSAGE_LINES:
                st.exc_lines.append(stripped)
            return True
        self._finish(key, complete=True)
        return self._outside(key, line, stripped)

    def _finish(self, key: tuple[str, bool], *, complete: bool) -> None:
        st = self.open.pop(key)
        if st.state == "after":
            st.close_link()
        elif st.state == "frames":
            complete = False  # the stream stopped before the exception line
            if st.frames or not st.all_links():
                st.exc_type, st.exc_lines, st.exc_line = "", [], st.last_seen
                st.close_link("cut")
        links = st.all_links()
        if st.notice is not None and not any(k.kind == "exception" for k in links):
            n = st.notice  # the traceback that would have typed it is cut: keep the text
            self._emit(Traceback(key[0], st.level, "", (n,), True, n.exc_line, n.exc_line, True))
        self._emit(
            Traceback(
                process=key[0],
                level=st.level,
                header=st.header,
                links=links,
                complete=complete,
                first_line=links[0].start_line,
                last_line=max(st.last_seen, links[-1].exc_line),
                headless=st.headless,
                dropped_links=st.dropped,
                header_error=st.header_error,
                header_line=st.header_line,
            )
        )

    def _emit(self, tb: Traceback) -> None:
        k = tb.key()
        if k in self.seen:
            return  # the same traceback again (logged, then printed by Python)
        if len(self.done) >= MAX_TRACEBACKS:
            self.dropped += 1
            return
        self.seen.add(k)
        self.done.append(tb)

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
        for key in list(self.orphans):
            self._orphaned(key)
        return self.done


def _frame(m: re.Match[str]) -> Frame:
    return Frame(m["file"], int(m["line"]), (m["func"] or "").strip())


def _introduces_next(st: OpenTraceback, line: Line) -> bool:
    """The last line taken into an exception's message (not its first) is the line right
    above a new ``Traceback`` header of the same stream: Python separates a chain's
    tracebacks with a blank line and a sentence, so that line is the record that
    introduces the new one (``logger.exception``'s message)."""
    return len(st.exc_lines) > 1 and st.last_seen == line.number - 1 and bool(st.exc_lines[-1])


def _another_exception(stripped: str) -> bool:
    """A line that is an exception line of its own (``vllm.v1.engine.exceptions.
    EngineDeadError: ..`` below a paste's ``...``): the next exception, not the message's
    continuation."""
    m = _EXC.match(stripped)
    return (
        m is not None
        and bool(m["msg"])
        and _EXC_NAME.search(m["type"].rsplit(".", 1)[-1]) is not None
        and _exception_like(m["type"], False)
    )


#: pytest's place of the error it reports, under the ``E`` lines: the file and line of
#: the frame that raised, and the exception's name (``pkg/x/manager.py:302:
#: ValidationError``).
_PYTEST_PLACE = re.compile(r"^(?P<file>[\w./-]+\.py):(?P<line>\d+): (?P<type>[A-Z]\w*)$")
#: An exception's name alone, as Python prints an exception without a message
#: (``AssertionError`` under ``assert x == M``): never a line of source, however a paste
#: indented it.
_BARE_NAMED = re.compile(r"^[A-Z][A-Za-z]*(?:Error|Exception)$")


def _outdented_exception(st: OpenTraceback, indent: int, stripped: str) -> bool:
    """An indented line that is the exception line of a traceback a paste indented whole
    (a quote block, a log viewer's margin): Python prints it two columns left of the
    frames, and the indent keeps that."""
    if not 0 < indent < st.frame_indent:
        return False
    m = _EXC.match(stripped)
    return m is not None and m["msg"] is not None and _exception_like(m["type"], True)


def _exception_like(typ: str, near: bool) -> bool:
    """A headless line's first word names an exception: by its name, or because a frame
    or source line of the same stream is right above it."""
    short = typ.rsplit(".", 1)[-1]
    named = _EXC_NAME.search(short) is not None
    if not any(c.islower() for c in short):
        return False  # class names are CamelCase: not INFO or NCCL
    if not short[:1].isupper() and not (named and ("." in typ or "::" in typ)):
        # a lower-case word, unless a module's class named as an error (a binding's
        # ``nixl._bindings.nixlBackendError``)
        return False
    return near or named
