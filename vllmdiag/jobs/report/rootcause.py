"""The root cause, as triage named it in the failing cell's log: the original exception
in the process that failed first, its traceback cut from the log (process and logger
prefixes removed, the middle trimmed when long), and its signature."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path

from vllmdiag.jobs.report import md
from vllmdiag.jobs.report.case import Case
from vllmdiag.model.hang import HangReport
from vllmdiag.model.outcome import Outcome
from vllmdiag.model.root_cause import Origin, RootCause
from vllmdiag.readers.triage.blame import blame_text
from vllmdiag.readers.triage.lines import normalise
from vllmdiag.spine.runner.reread import cell_log

#: A traceback longer than this shows its first and last lines.
HEAD, TAIL = 8, 30
#: A log line is shown up to this many bytes.
LINE_MAX = 4096
_EVIDENCE = {
    "traceback": "read from its traceback",
    "exception-line": "read from the exception line alone (no traceback of it in view)",
    "death-line": "read from the line saying the process died",
    "wrapper-message": "read from the error a wrapper quotes (the original is not in the log)",
}


def section(case: Case) -> str | None:
    cell, cause = case.cell, case.cause
    if cell.hang is not None and cause is not None and cause.evidence in ("hang-dump", "timeout"):
        return _hung(cell.hang, cause)
    if cause is None or cause.reader_error or not cause.signature:
        if cell.outcome is Outcome.TIMEOUT:
            return f"The cell did not finish: {cell.reason or 'timeout'} ({cell.elapsed_s:.0f} s)."
        return None
    out = [f"**Signature:** {md.code(cause.signature)}", "", _sentence(cause)]
    log = _log(case)
    excerpt = _excerpt(log, cause.lines) if cause.lines and log is not None else None
    if excerpt:
        first, last = cause.lines or (0, 0)
        out += ["", md.fence(excerpt, "text")]
        out += ["", f"(Lines {first}–{last} of the cell's log, process prefixes removed.)"]
    elif cause.frames:
        out += ["", "Frames, innermost last:", "", md.fence("\n".join(cause.frames), "text")]
    return "\n".join(out)


def _hung(hang: HangReport, cause: RootCause) -> str:
    """A cell killed at its timeout: where it hung, from the stacks dumped before the
    kill (nothing was raised)."""
    out = [f"**Signature:** {md.code(cause.signature or 'Timeout')}", ""]
    out.append(f"The cell hung: it was {hang.describe()}.")
    if hang.stuck is not None and hang.stuck.frames:
        frames = "\n".join(f.short() for f in hang.stuck.frames)
        out += ["", "The stuck thread's own frames, innermost first (py-spy):", ""]
        out.append(md.fence(frames, "text"))
    return "\n".join(out)


def _log(case: Case) -> Path | None:
    return cell_log(case.run.path, case.cell)


def _sentence(cause: RootCause) -> str:
    where = _raised_where(cause)
    frame = f" ({md.code(cause.frames[-1])})" if cause.frames else ""
    process = f" in process {md.code(cause.process)}" if cause.process else ""
    how = _EVIDENCE.get(cause.evidence or "", "")
    raised = f"Raised{process}, {where}{frame}" + (f"; {how}." if how else ".")
    whose = blame_text(cause.origin.value, cause.package, cause.why)
    return f"{raised} Whose fault it is: {md.code(whose)}."


def _raised_where(cause: RootCause) -> str:
    """Where it was raised, which need not be whose fault it is."""
    at = cause.raised_in
    if at is None:  # a reading recorded before raised_in: its origin was the place
        at = {Origin.VLLM: "vllm", Origin.USER: "script", Origin.TOOL: "vllmdiag"}.get(cause.origin)
        if at is None and cause.origin is Origin.DEPENDENCY:
            at = cause.package
    if at == "vllm":
        return "in vLLM's own code"
    if at == "script":
        return "in the workload's own code"
    if at == "vllmdiag":
        return "in vllmdiag's own code"
    return f"in {at}'s code" if at else "in code the log does not show"


def _excerpt(log: Path, lines: tuple[int, int]) -> str | None:
    """Lines ``first..last`` of ``log`` (1-based), each stripped to its text; the middle
    of a long traceback replaced by a count. Read line by line, each held to
    :data:`LINE_MAX` bytes, so a huge log or a huge line costs no memory."""
    first, last = lines
    if first < 1 or last < first:
        return None
    head: list[str] = []
    tail: deque[str] = deque(maxlen=TAIL)
    seen = 0
    try:
        for number, raw in _numbered(log, last):
            if number < first:
                continue
            text = normalise(raw.decode("utf-8", "replace").rstrip("\r\n"), number).text
            seen += 1
            (head if len(head) < HEAD else tail).append(text)
    except OSError:
        return None
    if not seen:
        return None
    hidden = seen - len(head) - len(tail)
    middle = [f"    ... ({md.plural(hidden, 'line')} not shown)"] if hidden > 0 else []
    return "\n".join([*head, *middle, *tail])


def _numbered(log: Path, last: int) -> Iterator[tuple[int, bytes]]:
    """(number, the line's first :data:`LINE_MAX` bytes) up to line ``last``."""
    number, held, full = 1, b"", False
    with open(log, "rb") as fh:
        while number <= last:
            chunk = fh.readline(LINE_MAX)
            if not chunk:
                if held:
                    yield number, held
                return
            if not full:
                held += chunk
                full = len(held) >= LINE_MAX
            if chunk.endswith(b"\n"):
                yield number, held[:LINE_MAX]
                number, held, full = number + 1, b"", False
