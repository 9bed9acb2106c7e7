"""Root causes without a Python traceback: a fatal signal, a refused command line, a
wrapper that quotes the error; else a note on why nothing could be named."""

from __future__ import annotations

import re

from vllmdiag.triage.catalogue import Catalogue
from vllmdiag.triage.model import Evidence, RootCause, Skipped
from vllmdiag.triage.signature import signature

_INNER = re.compile(r"Worker failed with error '(?P<inner>.*)', please check the stack trace")
_TYPED = re.compile(r"^[\w.]+: ")


def _cause(
    cat: Catalogue, ev: Evidence, kind: str, message: str, process: str, line: int, why: str
) -> RootCause:
    sig = signature(kind, message)
    values = {"vllm_version": ev.vllm_version or "<version>"}
    hit = cat.match(sig, f"{kind}: {message}", (), values)
    return RootCause(
        type=kind,
        message=message,
        process=process,
        signature=sig,
        known=hit.name if hit else None,
        next_step=hit.next_step if hit else None,
        lines=(line, line),
        meaning=hit.meaning if hit else None,
        reason=why,
    )


def without_traceback(
    wrappers: list[Skipped], ev: Evidence, cat: Catalogue, any_traceback: bool, truncated: bool
) -> tuple[RootCause | None, str | None]:
    """(root cause or None, note) when no traceback in the log is a root cause."""
    if ev.signal_text is not None and ev.signal_line is not None:
        text = ev.signal_text
        fatal = "Fatal Python error:" in text
        kind = "Fatal Python error" if fatal else "signal"
        message = text.split("Fatal Python error:", 1)[1].strip() if fatal else text
        why = f"no Python traceback; a fatal signal at line {ev.signal_line}"
        cause = _cause(cat, ev, kind, message, ev.signal_process or "?", ev.signal_line, why)
        return cause, f"killed by a signal: {text.strip()[:200]} (line {ev.signal_line})"
    if ev.cli_error is not None:
        line, msg, prog = ev.cli_error
        why = f"the command line was refused before anything ran (line {line})"
        return _cause(cat, ev, "CLI error", msg, prog, line, why), f"{prog} refused its arguments"
    for w in wrappers:
        m = _INNER.search(w.message)
        if m:
            inner = m["inner"]
            typ, _, msg = inner.partition(": ") if _TYPED.match(inner) else ("", "", inner)
            why = (
                "only a wrapper's quote of the error: the failing process's own traceback is "
                "not in this log"
            )
            cause = _cause(cat, ev, typ or "WrappedError", msg, w.process, w.line, why)
            return cause, "root cause read from a wrapper's message"
    if wrappers:
        return None, (
            "only wrappers found: the failing process's own output is not in this log; "
            "capture the child's stdout and stderr (vLLM logs to stdout)"
        )
    if ev.finished and not any_traceback:
        return None, f"no failure: the run finished and printed its results ({ev.finished[:120]})"
    if any_traceback and truncated:
        return None, "truncated: a traceback ends before its exception line"
    stop = f"; it stops at: {ev.last_line[:160]!r}" if ev.last_line else ""
    if ev.ends_mid_line:
        return None, (
            f"no traceback; the log ends mid-line (truncated, or killed while writing){stop}"
        )
    return None, (
        "no traceback: killed by a signal? (nothing in the log says why it stopped; "
        f"exit -9/137 is SIGKILL: the OOM killer or a timeout){stop}"
    )
