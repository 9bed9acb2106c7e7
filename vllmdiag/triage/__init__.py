"""Read a run's log the way an expert does: find every traceback, name the root cause,
give it a signature, look it up in the catalogue, and group many logs by cause."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.triage.attribution import attribute, labelled_logs, log_files
from vllmdiag.triage.catalogue import Catalogue
from vllmdiag.triage.lines import normalise
from vllmdiag.triage.model import Attribution, Evidence, Group, LogTriage, RootCause, Skipped
from vllmdiag.triage.reader import scan
from vllmdiag.triage.rootcause import choose
from vllmdiag.triage.tracebacks import TracebackParser

__all__ = [
    "Attribution",
    "Catalogue",
    "Group",
    "LogTriage",
    "RootCause",
    "Skipped",
    "attribute",
    "labelled_logs",
    "log_files",
    "triage_file",
]

_SIGNAL = re.compile(
    r"Fatal Python error: .+|Segmentation fault|Segfault encountered|core dumped"
    r"|^Killed\b|\bKilled$|\bSIG(?:KILL|SEGV|ABRT|BUS)\b|terminated by signal \d+"
    r"|exitcode=-\d+|exit code -?(?:9|11|6|134|137|139)\b"
)
_VERSION = re.compile(
    r"LLM engine \(v(?P<a>[^)\s]+)\)|API server version (?P<b>[\w.+-]+)"
    r"|vLLM version (?P<c>[\w.+-]+)"
)


_FINISHED = re.compile(r"^Throughput: [\d.]+ requests/s|^Avg latency: [\d.]+ seconds")


_CLI_ERROR = re.compile(r"^(?P<prog>[\w][\w .\-/]*): error: (?P<msg>.+)$")


class _Watch:
    """What the reader notices besides tracebacks: signals and the vLLM version."""

    def __init__(self, parser: TracebackParser) -> None:
        self.parser = parser
        self.signal: tuple[int, str, str] | None = None
        self.fatal: tuple[int, str, str] | None = None
        self.version: str | None = None
        self.finished: str | None = None
        self.cli_error: tuple[int, str, str] | None = None

    def feed(self, number: int, raw: bytes) -> None:
        line = normalise(raw.decode("utf-8", "replace"), number)
        self.parser.feed(line)
        text = line.text
        if self.fatal is None and not self.parser.has_open and _SIGNAL.search(text):
            hit = (number, text.strip(), line.process)
            self.signal = self.signal or hit
            if text.startswith("Fatal Python error"):
                self.fatal = hit
        if self.cli_error is None and ": error: " in text and not self.parser.has_open:
            m = _CLI_ERROR.match(text.strip())
            if m:
                self.cli_error = (number, m["msg"], m["prog"])
        if self.finished is None and _FINISHED.search(text):
            self.finished = text.strip()
        if self.version is None and ("version" in text or "engine (v" in text):
            v = _VERSION.search(text)
            if v:
                self.version = v["a"] or v["b"] or v["c"]


def triage_file(path: Path, catalogue: Catalogue | None = None) -> LogTriage:
    """Triage one captured log, streaming it (memory does not grow with its size)."""
    cat = catalogue or Catalogue.load()
    parser = TracebackParser()
    watch = _Watch(parser)
    try:
        info = scan(path, watch.feed, lambda: parser.has_open)
    except OSError as exc:
        raise VllmdiagError(
            f"cannot read the log: {exc.strerror or exc}",
            where=str(path),
            hint="give the path of a captured log file or a run directory",
        ) from None
    tracebacks = parser.finish()
    signal = watch.fatal or watch.signal
    ev = Evidence(
        vllm_version=watch.version,
        signal_line=signal[0] if signal else None,
        signal_text=signal[1] if signal else None,
        signal_process=signal[2] if signal else None,
        ends_mid_line=info.ends_mid_line,
        finished=watch.finished,
        cli_error=watch.cli_error,
        last_line=normalise(info.last_line.decode("utf-8", "replace"), info.lines).text.strip(),
        lines=info.lines,
    )
    return choose(tracebacks, cat, ev, str(path))


def triage_many(paths: Sequence[Path], catalogue: Catalogue | None = None) -> list[LogTriage]:
    cat = catalogue or Catalogue.load()
    return [triage_file(p, cat) for p in paths]
