"""When the failing process's own output is not in view: the error a parent's wrapper
quotes, and otherwise a note saying why no root cause can be named (never a guess)."""

from __future__ import annotations

import re

from vllmdiag.readers.triage.httperrors import quoted_body
from vllmdiag.readers.triage.relays import lazy_import_error
from vllmdiag.readers.triage.tracebacks import Link
from vllmdiag.readers.triage.triaged import Evidence

#: ``RuntimeError: Worker failed with error '<msg>', please check the stack trace ...``
#: (also inside a user's quote of it, its closing mark after the wrapper's own)
WORKER_QUOTED = re.compile(r"Worker failed with error '(?P<inner>.*?)'(?:,\s*please\b|[\"”]?\s*$)")
#: The same, its closing quote cut: where a wrapper quotes what a worker of vLLM's executor
#: raised.
WORKER_QUOTE = re.compile(r"Worker failed with error '(?P<inner>.+)")
#: V0's ``MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the
#: original error: RuntimeError('...')``, as a relaying process prints it.
_ORIGINAL = re.compile(
    r"find the original error: (?P<type>[A-Za-z_][\w.]*)\((?P<q>['\"])(?P<msg>.*?)(?P=q)\)"
)
#: A client's exception whose message is the status the server answered (``Request
#: failed: 404, ..``; rLLM's router's ``API request failed with status 500: ..``; Google's
#: ``400 Model server exited unexpectedly.``).
_REQUEST_FAILED = re.compile(
    r"^(?:Request failed: [45]\d\d\b|API request failed with status [45]\d\d\b|[45]\d\d [A-Z]"
    r"|Error code: [45]\d\d$)"
)
#: LiteLLM's mapping of a provider's error: ``APIConnectionError: VLLMException - <msg>``.
_LABELLED = re.compile(r"\b[A-Z]\w*Exception - (?P<msg>\S.*)$")
#: A client's exception whose message is the status and the server's words as plain
#: text (``Error code: 400 - You passed 8193 input tokens ..``).
_STATUS_TEXT = re.compile(r"^Error code: [45]\d\d - (?P<msg>[^{\s].*)$")
#: PaddleX's record of the error one of its pipeline's workers got (``RuntimeError:
#: Exception from the 'vlm' worker: Connection error.``, its VL model's client's).
_WORKER_GOT = re.compile(r"^Exception from the '[\w.-]+' worker: (?P<msg>\S.*)$")
_TYPED = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (?P<msg>.+)$")
#: The server's error as its repr, at the end of an HTTP client's exception.
_REPR_END = re.compile(
    r"\b(?P<type>[A-Z]\w*(?:Error|Exception))\((?P<q>['\"])(?P<msg>.*)(?P=q)\)\s*$"
)


def quoted(link: Link) -> tuple[str, str] | None:
    """(type, message) of the error a wrapper quotes; the type is empty when the quote
    names none. A quote cut off by the paste (or spread over lines) keeps its first
    line."""
    lazy = lazy_import_error(link.message)
    if lazy:
        return lazy
    o = _ORIGINAL.search(link.message)
    if o:
        return o["type"], o["msg"]
    got = _WORKER_GOT.match(link.message)
    if got:
        t = _TYPED.match(got["msg"])
        return (t["type"], t["msg"]) if t else ("", got["msg"])
    labelled = _LABELLED.search(link.message)
    if labelled:
        return quoted_body(labelled["msg"]) or ("", labelled["msg"])
    body = quoted_body(link.message)
    if body is not None:
        return body
    text = _STATUS_TEXT.match(link.message)
    if text:
        return "", text["msg"]
    r = _REPR_END.search(link.message) if link.message.endswith(")") else None
    if r:
        return r["type"], r["msg"]
    if _REQUEST_FAILED.match(link.message):
        return link.type, link.message
    m = WORKER_QUOTED.search(link.message)
    inner = m["inner"] if m else None
    if inner is None:
        o = WORKER_QUOTE.search(link.head)
        inner = o["inner"].rstrip("'") if o else None
    if not inner or not inner.strip():
        return None
    t = _TYPED.match(inner.strip())
    return (t["type"], t["msg"]) if t else ("", inner.strip())


def unknown_note(ev: Evidence, any_wrapper: bool, any_traceback: bool, truncated: bool) -> str:
    """Why no root cause could be named, and what the log shows instead."""
    stop = f"; it stops at: {ev.last_line[:160]!r}" if ev.last_line else ""
    if any_wrapper:
        return (
            "unknown: only wrappers are in view (the parent's 'see root cause above'); the "
            "failing process's own output is not in this log: capture the child's stdout and "
            "stderr (vLLM logs to stdout)"
        )
    if ev.finished and not any_traceback:
        return f"no failure: the run finished and printed its results ({ev.finished[:120]})"
    if any_traceback and truncated:
        return (
            "unknown: a traceback is cut before its exception line, and no other exception "
            f"or death line is in view{stop}"
        )
    if ev.ends_mid_line:
        return f"unknown: no exception and no death line in view; the log ends mid-line{stop}"
    return (
        "unknown: no exception and no death line in view (if the process was killed, "
        f"e.g. exit -9/137, the kernel log or the harness says why){stop}"
    )
