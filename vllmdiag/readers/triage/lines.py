"""One captured log line, stripped to what a reader needs: which process, which level,
which log record, what text.

A line reaches a log with layers around vLLM's text, in any mix: a markdown quote or a
k9s box border (pasted from a viewer), a capture timestamp (docker, kubectl, CI,
journald with its host and unit, a CRI ``stdout F`` stream tag), a docker compose
``service  |`` column, ANSI colours (real, ``^[[``-spelled, or with the escape byte
lost), process tags (``(EngineCore_DP0 pid=1)``, ``(RayWorkerWrapper pid=7, ip=..)``,
nested ones, torch's ``[rank0]:``), and a logger prefix: vLLM's (``INFO 09-21 12:34:56
[core.py:123]``, V0's ``core.py:123]``, no date), or a foreign one (glog/c10, Ray's C++
logger, dynamo, xinference, gpustack, vllm-ascend's ``[UC][E]``). See ``prefixes``.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass

from vllmdiag.readers.triage import prefixes as px

MAIN = "main"

#: Raw lines with nothing to peel (a traceback's frames and source lines, a blank line,
#: Python's chain separators): the common case inside a long traceback, kept cheap.
_PLAIN = re.compile(
    r"(?: +(?:File |[a-z_^~'\"{])| *$|Traceback \(|During handling of|The above exception)"
)


@dataclass(frozen=True)
class Line:
    """A normalised line: ``process`` is ``main`` for untagged lines; ``level`` is the
    vLLM logger level, or None for raw output (print, a traceback written by Python, a
    foreign logger); ``record`` identifies the log record the line belongs to (its
    logger prefix), None for raw output: continuation lines of one record share it."""

    number: int
    process: str
    level: str | None
    text: str
    record: str | None = None


#: Loggers' records that are errors (the level word of a foreign logger's prefix).
_ERROR_RECORD = re.compile(
    r"\b(?:ERROR|CRITICAL|FATAL)\b|^\[E\d|\[E\]|^\[\d{4}-\d{2}-\d{2} [\d:,.]+ [EF] \d+ \d+\]"
    r"|^[EF](?:\d{4})?\d{4} \d{2}:"  # glog's and klog's ``E0612 10:00:00.1 ..``
    r"|^\[error\]$"  # RunPod's worker's
)


def is_error_record(line: Line) -> bool:
    """The line is a log record at error level (vLLM's logger or a foreign one)."""
    if line.level is not None:
        return line.level in ("ERROR", "CRITICAL")
    return line.record is not None and _ERROR_RECORD.search(line.record) is not None


def strip_ansi(text: str) -> str:
    if "\x1b" in text or "[" in text:
        text = px.ANSI.sub("", text)
        if "m" in text:
            text = px.BARE_SGR.sub("", text)
    return text


def _tag(text: str) -> tuple[str, str] | None:
    """(process, rest) when ``text`` starts with a process tag."""
    p = px.PROCESS.match(text)
    if p is None:
        return None
    if p.group("name"):
        proc = f"{p.group('name')} pid={p.group('pid')}"
    elif p.group("lost"):
        proc = f"{p.group('lost')} pid={p.group('lpid')}"
    elif p.group("rpid"):
        proc = f"pid={p.group('rpid')}"
    elif p.group("rank"):
        proc = f"rank{p.group('rank')}"
    elif p.group("daemon"):
        proc = p.group("daemon")
    elif p.group("ranks"):
        proc = p.group("ranks").strip()
    else:
        proc = p.group("short")
    return proc, text[p.end() :]


#: vLLM's own processes, as their tags name them.
_VLLM_PROCESS = re.compile(
    r"^(?:EngineCore(?:_DP\d+)?|Worker(?:_[A-Z]+\d+)*|APIServer|ApiServer|VllmWorker(?:Process)?)"
    r"(?: rank=\d+| \(\w+\))? pid="
)


#: A Ray task's or actor's tag (``run_inference_one_model pid=7``, ``LLMRayActor pid=9``).
_RAY_TAG = re.compile(r"^(?P<name>[A-Za-z_][\w:.-]*) pid=\d+")
#: vLLM's own Ray actors (its Ray executor's workers and engines).
_VLLM_RAY_ACTOR = re.compile(r"^(?:RayWorker\w*|DPEngineCoreActor|EngineCoreActor)\b")


def ray_task_of(process: str) -> str | None:
    """The Ray task or actor a process tag names that is not one of vLLM's own (the code
    driving vLLM started it, and placed what ran in it), or None."""
    tag = _RAY_TAG.match(process)
    if tag is None or _VLLM_PROCESS.match(process) or _VLLM_RAY_ACTOR.match(process):
        return None
    return tag["name"]


def _peel(text: str) -> tuple[str, str]:
    """Capture layers and process tags off the front; the innermost tag names the
    process (vLLM's own tag inside a Ray or engine tag)."""
    process = MAIN
    for i in range(8):
        if i == 0:
            text = px.QUOTE.sub("", text, count=1)
            text = px.PYTEST_MARK.sub(" ", px.PYTEST_ERROR.sub("", text, count=1), count=1)
            lead = text[: len(text) - len(text.lstrip(" "))]
            marked = px.MARKUP.match(text[len(lead) :])
            if marked:  # emphasis that closes, or glued in front of a process tag
                inner = text[len(lead) + marked.end() :]
                end = px.MARKUP_END.search(inner)
                if end is not None or (inner[:1] == "(" and not lead):
                    text = lead + (inner[: end.start()] if end is not None else inner)
        box = px.BOX.match(text)
        if box:
            text = px.BOX_END.sub("", text[box.end() :])
            if px.RICH_SOURCE.match(text):
                text = "    " + text.lstrip("❱ ")  # rich's source line: indented, as Python's
            continue
        if i == 0 and "│" in text and not text.lstrip().startswith("│"):
            right = px.RIGHT_BORDER.match(text)  # a box line whose left border was cut
            if right:
                text = right["body"]
        m = px.CAPTURE.match(text)
        if m is None and text[:1] == " ":  # an indented paste: markdown, a quote
            m = px.CAPTURE.match(text.lstrip())
            text = text.lstrip() if m else text
        if m and m.end():
            text = text[m.end() :]
            continue
        tagged = _tag(text) or (_tag(text.lstrip()) if text[:1] == " " else None)
        if tagged:
            # torch's ``[rankN]:`` inside a vLLM engine process's tag labels that
            # process's rank; the process stays the one vLLM's tag names
            # (``(EngineCore pid=1) [rank0]:``); inside a framework's actor it names it
            if not (tagged[0].startswith("rank") and _VLLM_PROCESS.match(process)):
                process = tagged[0]
            text = tagged[1]
            continue
        m = px.POD.match(text) or px.COMPOSE.match(text)
        if m:
            text = text[m.end() :]
            continue
        break
    if process != MAIN and text.lstrip()[:1] in ("*", "`"):
        # emphasis the paste put around the line behind its tag (``[rank1]: **Err: ..**``)
        inner = text.lstrip()
        marked = px.MARKUP.match(inner)
        end = px.MARKUP_END.search(inner) if marked else None
        if marked and end is not None and end.start() > marked.end():
            text = inner[marked.end() : end.start()]
    return process, px.SPACED_TYPE.sub(r"\1", text, count=1)


#: A vLLM process tag anywhere in a line (see :func:`unglue`).
_TAG_ANYWHERE = re.compile(r"\([A-Za-z][\w-]*(?: \(\w+\)| rank=\d+)? pid=\d+(?:, ip=[^)]*)?\)")


#: A source line and the exception line glued by a lost line break (``raise
#: AttributeError(AttributeError: 'X' object has no attribute 'y'``), also where the end
#: of the line above ran into it (a photo's text read back: ``ortedraise ValueError(..``).
_RAISE_GLUED = re.compile(
    r"^(?P<src>\s*(?:\([^)]*\)\s*)*[a-z]*?raise [\w.]+\()"
    r"(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception): \S.*)$"
)


def unglue(raw: str) -> list[str]:
    """A line whose line breaks a paste lost, back in its lines: where the same process
    tag recurs inside one line, each occurrence starts a line of its own
    (``(APIServer pid=1)   File "..."(APIServer pid=1)     raise X``); a traceback
    flattened into one line without tags is split at its header, its frames and its
    exception line (see :func:`unflatten`). A line naming a tag once (a Ray task error's
    ``(pid=7, ip=..)``, a message quoting one) is left whole. A line that starts with
    vLLM's logger prefix and holds another one (``ERROR 08-04 07:35:11 [core.py:515]
    ^^^^ ERROR 08-04 07:35:11 [core.py:515] OSError: ..``) is two records."""
    if 'File "' in raw and (raw.count('File "') > 1 or _TB_HEAD in raw):
        return [line for part in _untag(raw) for line in unflatten(part)]
    if "raise " in raw:
        glued = _RAISE_GLUED.match(raw)
        if glued:
            return [glued["src"], glued["exc"]]
    if '.py", line ' in raw and "pid=" not in raw:
        cut = _CUT_FRAME_GLUED.match(raw)
        if cut:
            frame = f'  File "{cut["file"]}", line {cut["line"]}, in {cut["func"]}'
            return [frame, f"    {cut['src']}", cut["exc"]]
    return [record for part in _untag(raw) for record in _unrecord(part)]


#: A traceback's last frame, its ``File "`` cut with the paste or kept, glued to its
#: source line and its exception line (``configs/x.py", line 13, in <module>     ('a', 1)
#: TypeError: 'tuple' object is not callable``; ``File "../adapters.py", line 519, in send
#: raise ConnectionError(e, request=request) requests.exceptions.ConnectionError: ..``).
_CUT_FRAME_GLUED = re.compile(
    r'^\s*(?:File ")?(?P<file>[^\s"]+\.py)", line (?P<line>\d+), in (?P<func>[\w<>.]+)\s+'
    r"(?P<src>\S.*?)\s+(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception): \S.*)$"
)


#: vLLM's logger prefix with its date (``ERROR 08-04 07:35:11 [core.py:515]``), at a
#: line's start (after any process tag) and again further on.
_RECORD_HEAD = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2} \[[\w.-]+:\d+\]"
)
_RECORD_AGAIN = re.compile(
    r"(?<=\s)(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2} \[[\w.-]+:\d+\]"
)


def _unrecord(raw: str) -> list[str]:
    """A line holding two of vLLM's log records, split where the second one starts (it
    keeps the first one's process tag)."""
    if raw.count(":") < 6:
        return [raw]
    first = _RECORD_HEAD.search(raw, 0, 160)
    if first is None:
        return [raw]
    again = _RECORD_AGAIN.search(raw, first.end())
    if again is None:
        return [raw]
    tag = raw[: first.start()]
    return [raw[: again.start()].rstrip(), *_unrecord(tag + raw[again.start() :])]


_TB_HEAD = "Traceback (most recent call last):"
#: A frame in a flattened traceback: its ``File ".."`` line, then its source line.
_FLAT_FRAME = re.compile(
    r'^(?P<frame>File [“"][^"”]+[”"], line \d+(?:, in [^\s]+)?)\s*(?P<rest>.*)$'
)
_FLAT_SPLIT = re.compile(r'\s+(?=File [“"][^"”]+[”"], line \d+)')
#: The exception line at the end of a flattened traceback (``... raise X( ValueError: ..``).
_FLAT_EXC = re.compile(
    r"(?:^|\s)(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure)"
    r"(?:\([\w.]+\))?: \S.*)$"
)
_CARETS = re.compile(r"\s*[~^]{3,}\s*")


def unflatten(raw: str) -> list[str]:
    """A traceback whose line breaks were lost, in one line (``Traceback (most recent
    call last):   File "x.py", line 1, in f     g() ValueError: boom``), back in its
    lines: the header, each frame and its source line (indented as Python prints
    them), and the exception line. Text before the header stays a line of its own."""
    head, sep, body = raw.partition(_TB_HEAD)
    if not sep:
        head, body = "", raw
    pieces = _FLAT_SPLIT.split(body.strip())
    if len(pieces) < 2 and not (sep and pieces and _FLAT_FRAME.match(pieces[0])):
        return [raw]
    out = [head.rstrip()] if head.strip() else []
    if sep:
        out.append(_TB_HEAD)
    for i, piece in enumerate(pieces):
        m = _FLAT_FRAME.match(piece)
        if m is None:
            if piece.strip():
                out.append(piece.strip())
            continue
        out.append("  " + m["frame"])
        rest = _CARETS.sub(" ", m["rest"]).strip()
        if i == len(pieces) - 1:
            exc = _FLAT_EXC.search(rest)
            if exc is not None:
                source = rest[: exc.start("exc")].strip()
                if source:
                    out.append("    " + source)
                out.append(exc["exc"])
                continue
        if rest:
            out.append("    " + rest)
    return out


def _untag(raw: str) -> list[str]:
    if raw.count(" pid=") < 2:
        return [raw]
    tags = list(_TAG_ANYWHERE.finditer(raw))
    if len(tags) < 2:
        return [raw]
    counts: dict[str, int] = {}
    for m in tags:
        counts[m.group()] = counts.get(m.group(), 0) + 1
    cuts = [m.start() for m in tags if counts[m.group()] > 1 and m.start() > 0]
    if not cuts:
        return [raw]
    bounds = [0, *cuts, len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(bounds) if raw[a:b]]


def normalise(raw: str, number: int) -> Line:
    """Peel capture layers, colours, process tags and the logger prefix off ``raw``.

    A log of tracebacks repeated many times (a crash loop, every rank's copy) holds the
    same lines again and again: each distinct line is peeled once (the last 8,192 are
    kept), and a repeat costs a lookup."""
    if len(raw) <= _CACHED_LINE:
        seen = _peeled.get(raw)
        if seen is None:
            seen = _normalise(raw, 0)
            if len(_peeled) >= _CACHED_LINES:
                _peeled.pop(next(iter(_peeled)))
            _peeled[raw] = seen
        return dataclasses.replace(seen, number=number) if number else seen
    return _normalise(raw, number)


#: Lines longer than this are peeled every time (they rarely repeat).
_CACHED_LINE = 1024
_CACHED_LINES = 8192
_peeled: dict[str, Line] = {}


def _normalise(raw: str, number: int) -> Line:
    if "\x1b" not in raw and "^[" not in raw and _PLAIN.match(raw):
        return Line(number, MAIN, None, raw.rstrip().replace("\r", ""), None)
    text = strip_ansi(raw.rstrip("\r\n")).replace("\r", "")
    if px.FENCE.match(text):  # a markdown code fence around the paste: no text of the log
        return Line(number, MAIN, None, "", None)
    if "|" in text[:16] or "+" in text[:8]:  # an exception group: its gutters are no text
        head = px.GROUP_HEAD.match(text)
        if head:
            return Line(number, MAIN, None, head[1], None)
        if px.GROUP_RULE.match(text):
            return Line(number, MAIN, None, "", None)
        gutter = px.GROUP_GUTTER.match(text)
        if gutter and "|" in gutter.group():
            text = text[gutter.end() :]
            if text.startswith("File "):
                text = "  " + text  # a frame keeps the indent Python gives it
    if "─" in text:  # rich's box: its top border holds the traceback header
        top = px.RICH_TOP.match(text)
        if top:
            return Line(number, MAIN, None, top[1] + ":", None)
        if px.RICH_BOTTOM.match(text):
            return Line(number, MAIN, None, "", None)
    if "repeated" in text:
        text = px.REPEATED.sub("", text)
    process, text = _peel(text)
    if text.startswith("message repeated "):
        again = px.SYSLOG_REPEATED.match(text)
        if again:
            return normalise(again["line"], number)
    level: str | None = None
    record: str | None = None
    lg = px.LOGGER.match(text)
    if lg is None and text[:1] == " ":
        # a paste that indented every line (a list item's code block): vLLM's whole prefix,
        # its file tag included, still opens the record
        whole = px.LOGGER.match(text.lstrip(" "))
        if whole is not None and "]" in whole.group():
            text, lg = text.lstrip(" "), whole
    if lg:
        level = lg["level"] or px.CUT_LEVELS[lg["cut"]]
        level = "WARNING" if level == "WARN" else level
        record = text[: lg.end()].strip()
        text = text[lg.end() :]
    else:
        fg = px.FOREIGN.match(text)
        if fg:
            record = text[: fg.end()].strip()
            text = text[fg.end() :]
            if record.startswith("[UC]"):
                text = px.UC_SUFFIX.sub("", text)
            tagged = _tag(text)  # torch's [rankN]: after a glog prefix, or the reverse
            if tagged and process == MAIN:
                process, text = tagged
    return Line(number, process, level, text.rstrip(), record)


#: Where a message runs into its neighbour: the next log record glued on (a paste that
#: lost the line break: vLLM's ``INFO 01-02 12:00:00 [core.py:1]``, a process tag and
#: record, a capture timestamp), or a deduplicator's note (``[repeated 3x across
#: cluster]``, ``(repeated 2 times)``, Ray's one-time note on deduplication).
_NEIGHBOUR = re.compile(
    r"\s+(?:\([A-Za-z_][\w:.()-]* pid=\d+[^)]*\)\s*)?"
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2}"
    r"|\s+\([A-Za-z_][\w:.-]* pid=\d+[^)]*\)\s+(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\b"
    r"|\s+\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}[.,]\d+(?:Z|[+-]\d{2}:?\d{2})?\s"
    r"|\s*[\[(](?:message |this message was |last message )?repeated \d+(?:x| (?:more )?times?)"
    r"(?: across cluster)?[\])]"
    r"|\s*\(Ray deduplicates logs by default\."
)


def without_neighbours(message: str) -> str:
    """``message`` cut where the next record or a deduplicator's note was glued to it, and
    without the markdown bold a paste wrapped it in (``**message**``)."""
    if len(message) < 8:
        return message
    m = _NEIGHBOUR.search(message, 1)
    message = message[: m.start()].rstrip() if m else message
    if message.startswith("**") and message.endswith("**") and len(message) > 4:
        message = message[2:-2].strip()
    return message
