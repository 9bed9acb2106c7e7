"""The run directory, owned in one place: its layout (:mod:`layout`: every file name),
its one writer (:class:`RunDir`: journal, results, manifest, legs' records, verdict and
summaries, kept recipe files), its one reader (:func:`read_run` → :class:`RunRecord`)
and the one chain of schema migrations between them (:mod:`migrate`). Every value goes
through :mod:`vllmdiag.codec` both ways; no other module opens these files."""

from vllmdiag.spine.rundir import layout
from vllmdiag.spine.rundir.migrate import READABLE, SCHEMA
from vllmdiag.spine.rundir.reader import (
    cell_journals,
    ended,
    ends,
    env_record,
    load_result,
    read_run,
    recorded_hang,
    recorded_outcome,
    require_manifest,
    spawns,
    starts,
)
from vllmdiag.spine.rundir.records import (
    CellJournal,
    CellRecord,
    Ended,
    JournalEntry,
    Manifest,
    NodeManifest,
    RunEnd,
    RunRecord,
    RunStart,
    Spawn,
)
from vllmdiag.spine.rundir.secrets import learn_near as learn_secrets_near
from vllmdiag.spine.rundir.writer import JournalSink, RunDir, host, record_name, utc_now

__all__ = [
    "READABLE",
    "SCHEMA",
    "CellJournal",
    "CellRecord",
    "Ended",
    "JournalEntry",
    "JournalSink",
    "Manifest",
    "NodeManifest",
    "RunDir",
    "RunEnd",
    "RunRecord",
    "RunStart",
    "Spawn",
    "cell_journals",
    "ended",
    "ends",
    "env_record",
    "host",
    "layout",
    "learn_secrets_near",
    "load_result",
    "read_run",
    "record_name",
    "recorded_hang",
    "recorded_outcome",
    "require_manifest",
    "spawns",
    "starts",
    "utc_now",
]
