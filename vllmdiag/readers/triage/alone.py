"""A paste that is only an error's own words: no traceback, no exception type, no
marker a reader looks for (``The quantization method awq is not supported for the
current GPU. ..``, vLLM's error record of a CUDA error, a check's message a user copied
out of a notebook). Where nothing else in the log names a root cause (or only follow-on
errors do: a report that the error above it happened), the last of the
paste's final lines whose words the catalogue knows as a failure is that error's own
line: the catalogue is what says it is an error at all, so a line it does not know is
never taken, nor one where only a word or two of it matched (``Aborted``), a record
logged below error level, a line of source code, or the text of a Python warning.
Where a user's sentence quotes the error (in double quotes or backticks) or runs into
it (``.. but I got ValueError: ..``), the quote, or what follows the type, is the error.
Where a program's words saying what failed stand before the error's (``Failed to derive
max model length: cannot import name ..``), the line relays that error. A pretty-printed
HTTP error body's ``"message"`` line is taken whatever its words where the body's
``"type"`` line names an exception: the body says it is an error.

Where the catalogue knows none of those lines, a line that says by its own marks that it
is an error is taken (``marked_alone``): a typed error (``ValueError: ..``, alone, after a
program's label or inside a user's sentence or quote), a record a logger wrote at error
level, or a program's error label (``ERROR:``, uv's ``×``). Its words are the error as
printed; whose it is, the catalogue cannot say (blame follows the words alone)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Sequence

from vllmdiag.readers.triage.catalogue import Catalogue
from vllmdiag.readers.triage.causes import match
from vllmdiag.readers.triage.fallback import WORKER_QUOTED
from vllmdiag.readers.triage.httperrors import BODY_LINE, BODY_TYPE_LINE, PLAIN_QUOTES
from vllmdiag.readers.triage.lines import Line, is_error_record
from vllmdiag.readers.triage.relays import CJK, Relay

#: The error's type and message; a user may have put the type in backticks
#: (```ModuleNotFoundError` : No module named ..``), or retyped a builtin's name with a
#: space in it (``Import Error: cannot import name ..``: the type as printed).
_TYPED = re.compile(
    r"^`?(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)"
    # a class named with its module's dotted path (``huggingface_hub.utils._http.
    # OfflineModeIsEnabled``): an exception's type, whatever its name ends with
    r"|[a-z_]\w*(?:\.[a-z_]\w*)+\.[A-Z]\w+"
    r"|(?:Import|Value|Type|Attribute|Runtime"
    r"|Key|Index|Assertion|Name|OS|Memory|ModuleNotFound|NotImplemented|FileNotFound"
    r"|Permission|Connection|Timeout) Error)`? ?: (?P<msg>\S.*)$"
)
#: A program's label before its error (pip's ``ERROR: No matching distribution ..``, a
#: logger's bare ``ERROR - ``), a user's number in a list of errors (``2. ImportError:``),
#: or uv's marks for an error and each cause under it (``×``, ``├─▶``, ``╰─▶``).
_LABEL = re.compile(r"^(?:(?:ERROR|Error|error)(?::| -)|\d{1,2}[.)]|×|[├╰]─▶) +(?=\S)")
#: A CUDA compiler's diagnostic (``ptxas fatal   : Value 'sm_110a' is not defined ..``,
#: ``ptxas /tmp/x.ptx, line 57; error : Modifier ..``): the program, then its words after
#: the severity.
_DIAGNOSTIC = re.compile(
    r"^(?P<prog>ptxas|nvcc|nvlink|cicc|fatbinary)\b[^;:]*?[;:]?\s*(?:fatal|error)\s*:\s*(?=\S)"
)
#: A C++ program's place in its source before its words (Ray's ``gcs_rpc_client.h:552:
#: Failed to connect to GCS ..``, its log header cut).
_SOURCE_PLACE = re.compile(r"^[\w.-]+\.(?:h|hh|hpp|c|cc|cpp|cu|cuh):\d+: +(?=\S)")
#: A program relaying the error after its own words (``Failed to derive max model length:
#: <error>``, vLLM's ``Error in applying chat template from request: <error>``, LiteLLM's
#: ``Hosted_vllmException - <error>``): the relay's words say what failed, then a colon or
#: a dash, then the error. The error's words start after the last such separator before
#: the words the catalogue knows.
#: (``CUDA error: ..`` only names the error's kind: no relay.)
_RELAY_WORDS = re.compile(
    r"\b(?:[Ff]ailed to|[Ff]ail to|[Ee]rror (?:in|while|during|when|\w+ing)|[Uu]nable to"
    r"|[Cc]ould not)\b|[a-z]Exception(?::| -) ?$"
)
#: A user's sentence naming what follows as the error (``.. but Error out: <error>``):
#: the error's own line, after the user's words.
_SENTENCE_LABEL = re.compile(
    r"\b(?:but|and|then|got|get|an?|the|this)\s+(?:[Ee]rror|ERROR)(?: out)?(?::| -) ?$"
)
_SEPARATOR = re.compile(r"(?::| -) ?(?=\S)")
#: An OSError's own message (uvicorn's ``[Errno 98] error while attempting to bind ..``):
#: its words say what failed, and nothing relays it.
_OS_ERROR = re.compile(r"^\[Errno \d+\] ")
#: An HTTP error body pretty-printed over lines: its ``"message"`` line
#: (``httperrors.BODY_LINE``, or read with its quotes plain where a paste made them
#: typographic: ``“message": ‘..”,``) and the ``"type"`` line that names the exception.
_LOOSE_BODY = re.compile(r"""^"message": ?['"](?P<msg>.+?)["'],?$""")
#: The line as a user quoted it: in double quotes or backticks, each closed by its own
#: kind (a line that opens with a backticked name and ends with a quoted word is no quote).
_QUOTED = re.compile(
    r'^(?:["“]\s*(?P<inner>\S.*?)\s*["”]|`\s*(?P<ticked>\S.*?)\s*`'
    # a Python string's repr of the message, pasted whole (``'No available memory ..'``)
    r"|'(?P<single>[A-Z][^']*\s[^']*)')$"
)
#: A pair of double quotes (plain or typographic) or of backticks around a user's quote,
#: the nearest closing mark (``_PAIRS``) or the farthest (``_OUTER``: a quote with
#: backticks of its own inside, ```Cannot set `add_generation_prompt` to True ..` ``; a
#: quote opens before a word and closes after one, never at a space).
_PAIRS = re.compile(r'["“](?P<dq>[^"“”]+)["”]|`(?P<bt>[^`]+)`')
_OUTER = re.compile(r'["“](?P<dq>\S.*\S)["”]|`(?P<bt>\S.*\S)`')
#: A typed error's head inside a user's sentence (``.. but I got ValueError: ``).
_TYPE_IN_SENTENCE = re.compile(r"(?<![\w.])(?P<type>[A-Z][\w.]*(?:Error|Exception)): ")
#: A sentence in Chinese or Japanese that ends right where the error's words start
#: (``..评测，报错You passed 513 input tokens ..``: "reported the error").
_CJK_BEFORE = re.compile(f"[{CJK}]$")
_LONGEST = 2000
#: The fewest characters of the line the catalogue's pattern must match: its words, not
#: a word that also names a signal (``Aborted``).
_WORDS = 16
#: A line of a traceback's source (``raise ValueError("No available memory ..``).
_SOURCE = re.compile(r"^(?:raise|return|assert|if|elif|except|def|File)\b|^\w+ = ")
#: A Python warning's header (``.. torch/cuda/__init__.py:287: UserWarning: ``): the lines
#: after it are the warning's text, and the run went on.
_WARNING = re.compile(r"\b[A-Z]\w*Warning:(?:\s|$)")
_QUIET = frozenset({"DEBUG", "INFO", "WARNING"})
#: A line saying the error that ended the run is elsewhere (Ray's note that an actor's
#: creation task raised, whose own traceback it prints): never that error itself.
_ELSEWHERE = re.compile(
    r"error raised in its creation task|[Ss]ee (?:the )?(?:stack trace|root cause)"
)


def known_alone(
    ending: Sequence[Line],
    cat: Catalogue,
    version: str | None,
    skip: re.Pattern[str],
    read: Collection[int] = (),
) -> Relay | None:
    """The error whose own words are the last known failure among ``ending`` (the log's
    last lines), or None. ``skip``: lines that only relay an error (vLLM's wrappers);
    ``read``: numbers of lines another reader already read (a death notice the process
    lived on after)."""
    warned = next((i for i, k in enumerate(ending) if _WARNING.search(k.text)), len(ending))
    for line in reversed([_as_diagnostic(k) for k in ending[:warned]]):
        if line.level in _QUIET or line.number in read:
            continue
        if line.level is None and line.record is not None and not is_error_record(line):
            continue  # another logger's record below error level (glog's ``[W ..]``)
        whole = line.text.strip()
        quoted = _QUOTED.match(whole)
        if quoted:
            whole = quoted["inner"] or quoted["ticked"] or quoted["single"]
        if not whole or len(whole) > _LONGEST or _SOURCE.match(whole):
            continue
        if skip.search(whole) or _ELSEWHERE.search(whole):
            continue
        # the error a user's sentence quotes, then the line as a whole (an error body's
        # line is read whole: its quotes are JSON's)
        body = BODY_LINE.match(whole) or _LOOSE_BODY.match(whole.translate(PLAIN_QUOTES))
        for text in (*(() if body else _quotes_in(whole)), whole):
            got = _read(text, line, ending, cat, version)
            if got is not None:
                return got
    return None


#: A logger's or a program's label of what follows as an error, inside a record
#: (Xinference's ``Leave chat, error: <error>``, ``.. failed with error: <error>``).
_ERROR_LABEL = re.compile(r"(?:^|[,;]\s*|\s)(?:[Ee]rror|ERROR)(?: message)?: (?=\S)")
#: A line that only points elsewhere for the error (``see above``, ``see the logs``), or
#: says that a command whose own output holds the error failed (pip's
#: ``subprocess-exited-with-error``, BuildKit's ``did not complete successfully: exit
#: code: 1``).
_POINTER = re.compile(
    r"(?i)\bsee (?:above|below|the (?:logs?|output|error)\b)|\bfor details\b"
    r"|subprocess-exited-with-error|\bfailed building wheel|could not build wheels"
    r"|did not complete successfully|\bexit (?:code|status):? ?-?\d|returned non-zero"
    r"|\bthe following (?:exception|error)|\bshould be written to\b|\baborted due to errors\b"
)
#: A record's words that read as a sentence: three words or more, not code (a frame's
#: source line a logger printed, ``self._init_executor()``, carets).
_SENTENCE = re.compile(r"^(?=[\w'\"])(?![\w.]+\(.*\)$)(?=.*[A-Za-z]{2,}\s+\S+\s+\S)[^^~]*$")
#: uv's mark for the error it reports (its causes follow under ``╰─▶``).
_UV_ERROR = re.compile(r"^× +(?=\S)")
#: A shell that could not find a command (``/bin/sh: 1: /usr/local/cuda/bin/nvcc: not
#: found``): the shell's own error line.
_SHELL_NOT_FOUND = re.compile(
    r"^(?P<prog>(?:/[\w.-]+)*/?(?:sh|bash|dash|zsh|ksh)): (?:line )?\d+: "
    r"(?P<msg>\S.*: (?:command )?not found)$"
)


def marked_alone(
    ending: Sequence[Line],
    cat: Catalogue,
    version: str | None,
    skip: re.Pattern[str],
    read: Collection[int] = (),
) -> Relay | None:
    """The error among ``ending`` whose line says by its own marks that it is one, where
    the catalogue knows none of them as a failure: a shell's ``command not found``, the
    error vLLM's wrapper quotes inside a user's sentence (a relay), the last typed error
    line (alone, labelled, or inside a user's sentence or quote), else the last record at
    error level that its process did not log on after, else the last line a program
    labels as an error (uv's ``×`` line before its causes). None where no line is so marked; a line
    the catalogue knows as harmless is never taken."""
    warned = next((i for i, k in enumerate(ending) if _WARNING.search(k.text)), len(ending))
    lines = [
        k
        for k in map(_as_diagnostic, ending[:warned])
        if k.level not in _QUIET
        and k.number not in read
        and _plain(k.text.strip(), skip)
        and not _harmless(k.text.strip(), cat, version)
    ]
    for line in reversed(ending[:warned]):
        text = line.text.strip()
        shell = _SHELL_NOT_FOUND.match(text)
        if shell:
            return Relay(line.number, shell["prog"], "", shell["msg"], own=True)
        # vLLM's wrapper inside a user's sentence (``I'm getting this error: "RuntimeError:
        # Worker failed with error '<error>', please check .."``): the error it quotes
        quoted = WORKER_QUOTED.search(text) if line.number not in read else None
        if quoted and quoted["inner"].strip():
            inner = _TYPED.match(quoted["inner"])
            typ, msg = (inner["type"], inner["msg"]) if inner else ("", quoted["inner"])
            return Relay(line.number, line.process, typ, msg)
    for line in reversed(lines):
        typed = _typed_in(line.text.strip())
        if typed is not None:
            return Relay(line.number, line.process, typed[0], typed[1], own=True)
    for line in reversed(lines):
        went_on = any(k.number > line.number and k.level in _QUIET for k in ending)
        if is_error_record(line) and not went_on:
            text = _SOURCE_PLACE.sub("", _LABEL.sub("", line.text.strip()))
            cut = [m.end() for m in _ERROR_LABEL.finditer(text)]
            words = text[cut[-1] :] if cut else text
            if len(words) >= _WORDS and _SENTENCE.match(words):
                return Relay(line.number, line.process, "", words, own=True)
    uv = next((k for k in lines if _UV_ERROR.match(k.text.strip())), None)
    for line in [uv] if uv is not None else reversed(lines):
        text = line.text.strip()
        label = _LABEL.match(text)
        if label and len(text) - label.end() >= _WORDS:
            return Relay(line.number, line.process, "", text[label.end() :], own=True)
    return None


def _as_diagnostic(line: Line) -> Line:
    """A compiler's diagnostic as the compiler's own line: its words after the severity,
    its process the compiler (as ``ninja``'s and ``cmake``'s own lines are read)."""
    d = _DIAGNOSTIC.match(line.text.strip())
    if d is None:
        return line
    return dataclasses.replace(line, process=d["prog"], text=line.text.strip()[d.end() :])


def _harmless(text: str, cat: Catalogue, version: str | None) -> bool:
    """The catalogue knows the line's words as harmless (a program logged them and went
    on)."""
    words = _SOURCE_PLACE.sub("", _LABEL.sub("", text))
    typed = _TYPED.match(words)
    typ, msg = (typed["type"], typed["msg"]) if typed else ("", words)
    hit = match(cat, typ, msg, [], version)
    return hit is not None and hit.entry.benign


def _plain(text: str, skip: re.Pattern[str]) -> bool:
    """The line may hold an error's own words: not empty, not too long, no source code, no
    wrapper and no pointer to an error elsewhere."""
    return (
        bool(text)
        and len(text) <= _LONGEST
        and not _SOURCE.match(text)
        and not skip.search(text)
        and not _ELSEWHERE.search(text)
        and not _POINTER.search(text)
    )


def _typed_in(text: str) -> tuple[str, str] | None:
    """(type, message) of a typed error the line is or holds: the line itself (after a
    program's label), the last quote in it that is one, or the last type a sentence
    names, with what follows it."""
    for part in (_SOURCE_PLACE.sub("", _LABEL.sub("", text)), *_quotes_in(text)):
        typed = _TYPED.match(part)
        if typed:
            return typed["type"], typed["msg"]
    inner = _typed_before(text, len(text))
    if inner is not None and len(inner[1].strip()) >= _WORDS // 2:
        return inner[0], inner[1].strip()
    return None


def _quotes_in(text: str) -> list[str]:
    """What a user's sentence quotes (``it fails with "no kernel image is available .."``,
    ``I get this error "KeyError: '..'" Can anyone ..``): each span between a pair of double
    quotes or backticks, the last first, then the outermost pair of each kind (a quote
    with backticks inside it); markdown's bold marks dropped. Only spans with a word
    space in them: a quoted name alone is not an error."""
    spans = [next(g for g in m.groups() if g is not None) for m in _PAIRS.finditer(text)][::-1]
    for m in _OUTER.finditer(text):
        mark = m.group()[0]
        inner = m["dq"] or m["bt"]
        first = inner.find("`" if mark == "`" else '"')
        if first == -1 or inner[first - 1].isspace():  # its first inner mark opens a quote
            spans.append(inner)
    out = [s.replace("**", "").strip() for s in spans]
    return [s for s in dict.fromkeys(out) if " " in s and s != text]


def _read(
    text: str, line: Line, ending: Sequence[Line], cat: Catalogue, version: str | None
) -> Relay | None:
    """The error ``text`` (a line of the paste, or what it quotes) is, where the catalogue
    knows its words as a failure (or an error body's type line says it is one)."""
    text = _SOURCE_PLACE.sub("", _LABEL.sub("", text))
    typed = _TYPED.match(text)
    typ, msg = (typed["type"], typed["msg"]) if typed else ("", text)
    body = BODY_LINE.match(text) or _LOOSE_BODY.match(text.translate(PLAIN_QUOTES))
    if body:
        # the message as pasted (the loose match read the line with its quotes plain)
        msg = text[body.start("msg") : body.end("msg")]
        later = (
            BODY_TYPE_LINE.match(k.text.strip().translate(PLAIN_QUOTES))
            for k in ending
            if k.number > line.number
        )
        typ = next((t["type"] for t in later if t), "")
        if typ:  # a body whose type line names an exception: an error body, known or not
            return Relay(line.number, line.process, typ, msg, own=True)
    hit = match(cat, typ, msg.translate(PLAIN_QUOTES), [], version)
    if hit is None or hit.entry.benign or hit.entry.raised_by is not None:
        return None
    words = hit.entry.pattern.search(msg) or hit.entry.pattern.search(text)
    if words is None or len(words.group()) < _WORDS:
        return None
    if typ or words.string is not msg:
        return Relay(line.number, line.process, typ, msg, own=True)
    # untyped words the catalogue found inside the line: what stands before them
    inner = _typed_before(msg, words.start())
    if inner is not None:  # a sentence runs into the error's typed line
        return Relay(line.number, line.process, inner[0], inner[1], own=True)
    own = _labelled(msg, words.start())
    if own is not None:
        return Relay(line.number, line.process, "", own, own=True)
    # an OSError's own words (``[Errno 98] error while ..``) relay nothing
    relayed = None if _OS_ERROR.match(msg) else _relayed(msg, words.start())
    if relayed is not None:
        return Relay(line.number, line.process, "", relayed, context=msg[: -len(relayed)])
    if _CJK_BEFORE.search(msg, 0, words.start()):
        # a sentence in Chinese or Japanese runs straight into the error's words
        return Relay(line.number, line.process, "", msg[words.start() :], own=True)
    return Relay(line.number, line.process, typ, msg, own=True)


def _typed_before(msg: str, start: int) -> tuple[str, str] | None:
    """(type, message) where a user's sentence runs into a typed error line before the
    words the catalogue knows (``.. but I got ValueError: X does not support LoRA yet.``):
    the last type named before ``start``, and what follows it."""
    last = None
    for m in _TYPE_IN_SENTENCE.finditer(msg, 0, start):
        last = m
    return (last["type"], msg[last.end() :]) if last is not None else None


def _relayed(msg: str, start: int) -> str | None:
    """The error a program's relaying words put before it (``Failed to derive max model
    length: cannot import name ..``): what follows the last separator before ``start``
    (where the catalogue's words begin), when the words before it name a failure; else
    None (the line is the error's own words)."""
    cut = _last_cut(msg, start)
    return msg[cut:] if cut and _RELAY_WORDS.search(msg[:cut]) else None


def _labelled(msg: str, start: int) -> str | None:
    """The error's words after a user's sentence names them as the error, before
    ``start`` (where the catalogue's words begin); else None."""
    cut = _last_cut(msg, start)
    return msg[cut:] if cut and _SENTENCE_LABEL.search(msg[:cut]) else None


def _last_cut(msg: str, start: int) -> int:
    """Where the words after the last separator (a colon or a dash) before ``start``
    begin; 0 where there is none."""
    cuts = [m.end() for m in _SEPARATOR.finditer(msg, 0, start + 1) if m.end() <= start]
    return cuts[-1] if cuts else 0
