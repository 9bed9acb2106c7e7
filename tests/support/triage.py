"""Triage of a log excerpt or of a corpus fixture, as the reader tests need it: the
root cause of a few lines written as a log file, or of a real log kept under
``fixtures/logs/``."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import FIXTURES
from vllmdiag.readers.triage import Catalogue, LogTriage, RootCause, triage_file

CATALOGUE = Catalogue.load(use_env=False)


def triage_text(tmp_path: Path, text: str) -> LogTriage:
    """Triage ``text`` written as a log file under ``tmp_path``."""
    log = tmp_path / "excerpt.log"
    log.write_text(text)
    return triage_file(log, CATALOGUE)


def cause(tmp_path: Path, text: str) -> RootCause:
    """The root cause of ``text``, which must name one, and say whose it is and why."""
    rc = triage_text(tmp_path, text).root_cause
    assert rc is not None, text
    assert rc.why, "every blame says why"
    return rc


def no_cause(tmp_path: Path, text: str) -> str:
    """The note of a log that names no root cause (it must name none)."""
    t = triage_text(tmp_path, text)
    assert t.root_cause is None, t.root_cause
    assert t.note is not None
    return t.note


def fixture_cause(corpus: str, name: str) -> RootCause:
    """The root cause of the real log ``fixtures/logs/<corpus>/<name>``."""
    rc = triage_file(FIXTURES / "logs" / corpus / name, CATALOGUE).root_cause
    assert rc is not None, name
    return rc
