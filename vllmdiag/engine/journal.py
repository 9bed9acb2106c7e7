"""The run directory: an append-only, schema-versioned ``run.jsonl`` plus one atomically
written ``result.json`` per finished cell, so a run killed at any instant loses nothing
that had finished and can be resumed."""

from __future__ import annotations

import json
import os
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vllmdiag import atomic
from vllmdiag.errors import VllmdiagError
from vllmdiag.model.outcome import CellResult

SCHEMA = 1
EVENTS = "run.jsonl"


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, recipe_name: str, *, out: Path | None, runs_root: Path) -> RunDir:
        if out is None:
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            out = runs_root / f"{recipe_name}-{stamp}"
        if (out / EVENTS).exists():
            raise VllmdiagError(
                "this run directory already holds a run",
                where=str(out),
                hint=f"resume it with --resume {out}, or choose another --out",
            )
        out.mkdir(parents=True, exist_ok=True)
        return cls(out)

    @classmethod
    def resume(cls, path: Path, recipe_name: str) -> RunDir:
        events = path / EVENTS
        if not events.exists():
            raise VllmdiagError(
                "not a vllmdiag run directory (no run.jsonl)",
                where=str(path),
                hint="give the directory a previous 'vllmdiag matrix' printed",
            )
        run = cls(path)
        for i, ev in enumerate(run.events(), start=1):
            if ev.get("schema") != SCHEMA:
                raise VllmdiagError(
                    f"run.jsonl schema {ev.get('schema')!r}; this vllmdiag reads {SCHEMA}",
                    where=f"{events}:{i}",
                    hint="resume it with the vllmdiag version that started it",
                )
            if ev.get("event") == "run_started" and ev.get("recipe") != recipe_name:
                raise VllmdiagError(
                    f"this run is of recipe {ev.get('recipe')!r}, not {recipe_name!r}",
                    where=str(path),
                    hint="resume a run with the recipe that started it",
                )
        return run

    def events(self) -> list[dict[str, Any]]:
        out = []
        with open(self.path / EVENTS, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue  # a line torn by a crash mid-write: the result files rule
        return out

    def event(self, kind: str, **fields: Any) -> None:
        atomic.append_jsonl(
            self.path / EVENTS, {"schema": SCHEMA, "event": kind, "ts": utc_now(), **fields}
        )

    def cell_dir(self, cell_id: str) -> Path:
        return self.path / "cells" / cell_id

    def log_path(self, cell_id: str) -> Path:
        return self.cell_dir(cell_id) / "log.txt"

    def out_dir(self, cell_id: str) -> Path:
        return self.cell_dir(cell_id) / "out"

    def prepare_cell(self, cell_id: str) -> None:
        """A fresh attempt: keep the previous attempt's log beside it, never mix them."""
        log = self.log_path(cell_id)
        if log.exists():
            os.replace(log, log.with_name("log.previous.txt"))
        self.out_dir(cell_id).mkdir(parents=True, exist_ok=True)

    def write_result(self, result: CellResult) -> None:
        atomic.write_json(self.cell_dir(result.id) / "result.json", result.to_json())

    def finished(self) -> dict[str, CellResult]:
        out: dict[str, CellResult] = {}
        for file in sorted((self.path / "cells").glob("*/result.json")):
            try:
                res = CellResult.from_json(atomic.read_json(file))
            except (OSError, ValueError, KeyError):
                continue
            out[res.id] = res
        return out

    def write_json(self, name: str, obj: Any) -> None:
        atomic.write_json(self.path / name, obj)

    def write_text(self, name: str, text: str) -> None:
        atomic.write_text(self.path / name, text)


def host() -> str:
    return socket.gethostname()
