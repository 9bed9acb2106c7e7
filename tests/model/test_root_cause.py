"""One root-cause type: what triage reads from a log is the value a cell's result keeps,
its origin an enum the whole tree compares as one, and results recorded before (origin
as the place it was raised, schema 1) still load."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tests.support.paths import FIXTURES
from vllmdiag import codec
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.root_cause import Origin, RootCause
from vllmdiag.readers.triage import ORIGINS, triage_file
from vllmdiag.spine.rundir import read_run
from vllmdiag.spine.runner.readers import RunReaders

#: The keys a result's root cause has always had (a run directory's readers use them).
RECORDED = {
    "type", "message", "process", "signature", "known", "next_step", "advice", "origin",
    "package", "why", "raised_in", "evidence", "frames", "lines", "reader_error",
}  # fmt: skip


def test_blame_decides_among_the_enum_s_origins() -> None:
    """Every origin triage's rules can decide is a member; ``user`` is only read back."""
    assert {o.value for o in Origin} - set(ORIGINS) == {"user"}
    assert set(ORIGINS) <= {o.value for o in Origin}


def test_the_cell_keeps_what_triage_read(tmp_path: Path) -> None:
    log = FIXTURES / "logs" / "b200_018_whisper_thrmma.log"
    read = triage_file(log).root_cause
    kept = RunReaders().root_cause(log)
    assert isinstance(read, RootCause) and read.type and read.why
    assert kept == read
    assert isinstance(kept.origin, Origin)
    data = codec.dump(kept)
    assert set(data) >= RECORDED and data["origin"] == kept.origin.value
    assert codec.load(RootCause, json.loads(json.dumps(data))) == kept


def test_a_death_line_is_recorded_without_a_type_as_results_always_were(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("INFO starting\nERROR Engine core proc EngineCore_0 died unexpectedly\n")
    read = triage_file(log).root_cause
    kept = RunReaders().root_cause(log)
    assert read is not None and read.evidence == "death-line" and read.known == "worker-died"
    assert read.type == "" and kept.type is None
    assert kept == dataclasses.replace(read, type=None)


def test_results_recorded_before_still_load() -> None:
    """The report fixture's results named the place (``user``); a schema-1 run reads too."""
    cells = sorted((FIXTURES / "report" / "thrmma-cpu" / "cells").glob("*/result.json"))
    assert cells
    origins = set()
    for path in cells:
        result = codec.load(CellResult, json.loads(path.read_text()))
        if result.root_cause is not None:
            origins.add(result.root_cause.origin)
    assert Origin.USER in origins
    record = read_run(FIXTURES / "schema1-run" / "run")
    results = [c.result for c in record.cells.values() if c.result is not None]
    causes = [r.root_cause for r in results if r.root_cause is not None]
    assert results and all(isinstance(c.origin, Origin) for c in causes)
