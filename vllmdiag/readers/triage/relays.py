"""Lines in which a process around vLLM relays an error it got, without a traceback of
its own: a server or runtime saying what failed and quoting the error (``Failed to
initialize Python stub: TypeError: ..``, ``Failed to import python 'vllm' module. ..
AttributeError: ..``), an error record saying a server failed to start and why, the same
in Chinese, a failure phrase quoting the exception's repr, an error quoted as one
string with its line breaks escaped (the last line names it), a pydantic validation
error's body line whose header line is cut, and vLLM's own request-length message as a
client prints the 400 it got back.

Also an error a person quotes in prose, in backticks (``it complains `AttributeError:
..` ``; an untyped ``f() got an unexpected keyword argument 'x'``), and pip's resolver
refusing an install (``Cannot install vllm because these package versions have
conflicting dependencies.``): these are the error's own words, read as its exception
line."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vllmdiag.readers.triage.lines import Line

#: A failure phrase, then the error it quotes, typed.
_TYPED = re.compile(
    r"(?:\b[Ff]ailed to [\w' .-]+?|\bError (?:in|while|during) [\w' .-]+?)[:.?!]"
    r"(?: [^:]*?[.?!])? (?P<type>[A-Z]\w*(?:Error|Exception)): (?P<msg>\S.*)$"
)
#: A failure phrase quoting the exception's repr (vLLM's ``Failed to import from vllm._C
#: with ImportError('..: undefined symbol: ..')``, logged as a warning).
_REPR = re.compile(
    r"\b[Ff]ailed to [\w' .-]+? with (?P<type>[A-Z]\w*(?:Error|Exception))"
    r"\((?P<q>['\"])(?P<msg>.+?)(?P=q)\)"
)
#: An error record saying a server or model failed to start or load, and why.
_FAILED = re.compile(
    r"^(?:Failed to (?:start|launch|load|serve|initialize)|Could not (?:start|load)"
    r"|Unable to (?:start|load))\b[^:]*: \S"
)
#: vLLM's answer to a request longer than the model's context, as a client relays it.
_CONTEXT = re.compile(
    r"This model's maximum context length is \d+ tokens\. However, you requested \d+ tokens.*"
)
#: A failure phrase in Chinese (``模型加载失败: <reason>``: "model loading failed").
_LOCALIZED = re.compile(r"^[^\x00-\x7f]*(?:失败|错误)[:：] ?(?P<msg>\S.*)$")
#: An error quoted as one escaped string (``"..\\n  At least one ..:\\nray.exceptions.
#: RaySystemError: System error: .."``: Triton, JSON logs): its last line is the error.
_ESCAPED_EXC = re.compile(r'^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>.+?)"?$')
_ESCAPED_COLOUR = re.compile(r"\\u001[Bb](?:\[[0-9;]*m)?")  # its "[36m" may be gone
_RAY_ACTOR = re.compile(r"ray::(?P<actor>\w+)\.[\w.]+\(\)\s*\(pid=(?P<pid>\w+)")
#: A pydantic v2 validation error's own line (``Value error, <msg> [type=value_error,
#: input_value=..]``) without the header line that names the error: a paste that kept
#: only the body.
_PYDANTIC_LINE = re.compile(r"^(?:Value|Assertion) error, \S.* \[type=\w+, input_value=")
PYDANTIC_ERROR = "pydantic_core._pydantic_core.ValidationError"
#: An error quoted in backticks inside a sentence: typed, or Python's own untyped
#: argument error (the closing backtick may be cut with the paste).
_BACKTICK_TYPED = re.compile(
    r"`(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>[^`]+?)(?:`|$)"
)
_BACKTICK_ARGS = re.compile(
    r"`(?P<msg>[\w.]+\(\) (?:got an unexpected keyword argument|missing \d+ required"
    r"(?: positional| keyword-only)? arguments?:|takes \d+ positional arguments? but)"
    r" [^`]+?)(?:`|$)"
)
#: pip's resolver giving up (the ``ResolutionImpossible`` line follows, naming no package).
_PIP_CONFLICT = re.compile(
    r"^(?:ERROR: )?(?P<msg>Cannot install .+? because these package versions have "
    r"conflicting dependencies\.)"
)
_OPENAI_TYPE = re.compile(r"'type': '(?P<type>\w+Error)'")
_QUOTE_END = re.compile(r"""["']+\s*$""")


@dataclass(frozen=True)
class Relay:
    line: int
    process: str
    type: str
    message: str
    own: bool = False  # the error's own words (a quote in prose, pip's): not a relay
    #: the relaying line's own words around the error (``Failed to import python 'vllm'
    #: module. Are we running in the correct venv?``): what it says may name whose it is
    context: str = ""
    pip: bool = False  # pip's resolver refusing an install (its causes follow)


def classify(line: Line, error_record: bool) -> Relay | None:
    """The error ``line`` relays, or None. ``error_record``: the line is an error-level
    log record (an untyped reason is taken only from one)."""
    text = line.text.strip()
    if len(text) < 12 or len(text) > 4000:
        return None
    if "\\n" in text:
        parts = _ESCAPED_COLOUR.sub("", text).split("\\n")
        e = _ESCAPED_EXC.match(parts[-1].strip())
        if e and len(parts) > 1:
            actor = _RAY_ACTOR.search(parts[0])
            proc = f"{actor['actor']} pid={actor['pid']}" if actor else line.process
            return Relay(line.number, proc, e["type"], e["msg"])
    q = _BACKTICK_TYPED.search(text) or _BACKTICK_ARGS.search(text)
    if q:
        typ = q["type"] if "type" in q.groupdict() else ""
        return Relay(line.number, line.process, typ, q["msg"].strip(), own=True)
    p = _PIP_CONFLICT.match(text)
    if p:
        return Relay(line.number, line.process, "", p["msg"], own=True, pip=True)
    r = _REPR.search(text)
    if r:
        return Relay(line.number, line.process, r["type"], r["msg"])
    m = _TYPED.search(text)
    if m:
        msg = _QUOTE_END.sub("", m["msg"])
        return Relay(line.number, line.process, m["type"], msg, context=text[: m.start("type")])
    c = _CONTEXT.search(text)
    if c:
        t = _OPENAI_TYPE.search(text)
        msg = c.group().split('", ')[0].rstrip("\"'")
        return Relay(line.number, line.process, t["type"] if t else "", msg)
    if _PYDANTIC_LINE.match(text):
        return Relay(line.number, line.process, PYDANTIC_ERROR, text)
    z = _LOCALIZED.match(text)
    if z:
        return Relay(line.number, line.process, "", z["msg"])
    if error_record and _FAILED.match(text):
        return Relay(line.number, line.process, "", text)
    return None
