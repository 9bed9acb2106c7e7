"""The bisect journal: JSONL under ``<cache>/bisect/<key>/``, a header naming the
question and one line per finished step, each written through :mod:`vllmdiag.codec`.

The journal is a subscriber of the run's events: it writes a step when the run reports
it finished (:class:`~vllmdiag.jobs.bisect.events.StepFinished`), exactly what the live view
shows. A step is written only once complete; a line cut short by a crash is ignored, so
that step simply runs again on resume.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from vllmdiag import codec
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.bisect.events import BisectEvent, StepFinished
from vllmdiag.jobs.bisect.request import SCHEMA, BisectQuestion
from vllmdiag.jobs.bisect.results import Step
from vllmdiag.services import atomic


class BisectJournal:
    """Append-only steps of one bisect question; refuses a journal of another schema.
    Call it with the run's events (it is an ``Observer[BisectEvent]``)."""

    def __init__(self, directory: Path, question: BisectQuestion, *, fresh: bool) -> None:
        self.dir = directory
        self.path = directory / "journal.jsonl"
        self.steps: dict[str, Step] = {}
        directory.mkdir(parents=True, exist_ok=True)
        if fresh or not self.path.exists():
            atomic.write_text(self.path, json.dumps({"header": codec.dump(question)}) + "\n")
            return
        lines = self.path.read_text(encoding="utf-8").splitlines()
        if _schema(lines[0] if lines else "") != SCHEMA:
            raise VllmdiagError(
                f"the bisect journal {self.path} has another schema",
                hint="run again with --fresh to start over",
            )
        for line in lines[1:]:
            try:
                step = codec.load(Step, json.loads(line))
            except (ValueError, codec.ValidationError):
                continue  # a line cut short by a crash: that step runs again
            self.steps[step.version] = replace(step, resumed=True)

    def __call__(self, event: BisectEvent) -> None:
        if isinstance(event, StepFinished) and not event.step.resumed:
            atomic.append_jsonl(self.path, codec.dump(event.step))
            self.steps[event.step.version] = event.step


def _schema(first_line: str) -> object:
    try:
        head = json.loads(first_line)
    except ValueError:
        return None
    header = head.get("header") if isinstance(head, dict) else None
    return header.get("schema") if isinstance(header, dict) else None
