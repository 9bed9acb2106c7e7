"""The bisect journal: JSONL under ``<cache>/bisect/<key>/``, a header naming the
question and one line per finished step. A step is written only once complete; a line
cut short by a crash is ignored, so that step simply runs again on resume."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from vllmdiag import atomic
from vllmdiag.errors import VllmdiagError
from vllmdiag.window.bisect import Verdict

SCHEMA = 1


@dataclass(frozen=True)
class Step:
    version: str
    verdict: Verdict
    rc: int | None
    elapsed_s: float
    rcs: tuple[int | None, ...] = ()
    value: float | None = None
    detail: str = ""
    resumed: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "verdict": self.verdict.value,
            "rc": self.rc,
            "elapsed_s": round(self.elapsed_s, 3),
            "rcs": list(self.rcs),
            "value": self.value,
            "detail": self.detail,
            "resumed": self.resumed,
        }

    @classmethod
    def from_json(cls, d: dict[str, object]) -> Step:
        value = d.get("value")
        rc = d.get("rc")
        return cls(
            version=str(d["version"]),
            verdict=Verdict(str(d["verdict"])),
            rc=int(rc) if isinstance(rc, int) else None,
            elapsed_s=float(d.get("elapsed_s", 0.0)),  # type: ignore[arg-type]
            rcs=tuple(r if isinstance(r, int) else None for r in d.get("rcs", []) or []),  # type: ignore[attr-defined]
            value=float(value) if isinstance(value, (int, float)) else None,
            detail=str(d.get("detail", "")),
            resumed=True,
        )


class Journal:
    """Append-only steps of one bisect question; refuses a journal of another schema."""

    def __init__(self, directory: Path, header: dict[str, object], *, fresh: bool) -> None:
        self.dir = directory
        self.path = directory / "journal.jsonl"
        self.steps: dict[str, Step] = {}
        directory.mkdir(parents=True, exist_ok=True)
        if fresh or not self.path.exists():
            atomic.write_text(self.path, json.dumps({"header": header}) + "\n")
            return
        lines = self.path.read_text(encoding="utf-8").splitlines()
        head = json.loads(lines[0]) if lines else {}
        if head.get("header", {}).get("schema") != SCHEMA:
            raise VllmdiagError(
                f"the bisect journal {self.path} has another schema",
                hint="run again with --fresh to start over",
            )
        for line in lines[1:]:
            try:
                step = Step.from_json(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by a crash: that step runs again
            self.steps[step.version] = step

    def append(self, step: Step) -> None:
        atomic.append_jsonl(self.path, step.to_json())
        self.steps[step.version] = step
