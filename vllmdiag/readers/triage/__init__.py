"""Read a run's log the way an expert does: find every traceback, name the root cause,
give it a signature, look it up in the catalogue, and group many logs by cause."""

from __future__ import annotations

from vllmdiag.model.root_cause import Origin, RootCause
from vllmdiag.readers.triage.attribution import attribute, labelled_logs, log_files
from vllmdiag.readers.triage.blame import ORIGINS
from vllmdiag.readers.triage.catalogue import Catalogue
from vllmdiag.readers.triage.triage_log import STDIN, triage_file
from vllmdiag.readers.triage.triaged import Attribution, Group, LogTriage, Skipped

__all__ = [
    "ORIGINS",
    "STDIN",
    "Attribution",
    "Catalogue",
    "Group",
    "LogTriage",
    "Origin",
    "RootCause",
    "Skipped",
    "attribute",
    "labelled_logs",
    "log_files",
    "triage_file",
]
