"""Watching a run from outside, as the tests that stop, kill and spread runs do: its
processes (read from /proc, independently of :mod:`vllmdiag.services.proc`), its journal as it
grows, and the stamps that cells of a stamp recipe leave behind."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def gone_within(pid: int, seconds: float) -> bool:
    """Whether ``pid`` has ended, or ends within ``seconds`` (a grace and a KILL take a
    moment)."""
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def events(run_dir: Path) -> list[dict[str, Any]]:
    """The run's journal so far (none before it is created)."""
    path = run_dir / "run.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def pids_when_up(run_dir: Path, cell: str, count: int = 3, within: float = 60.0) -> list[int]:
    """The ``count`` pids a cell's tree writes to ``out/pids`` once all are up."""
    pid_file = run_dir / "cells" / cell / "out" / "pids"
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pid_file.exists() and len(pid_file.read_text().split()) == count:
            return [int(p) for p in pid_file.read_text().split()]
        time.sleep(0.05)
    raise AssertionError(f"{cell} never came up")


def stamp_recipe(tmp_path: Path, name: str, script: str, body: str) -> Path:
    """A recipe on this python whose cells run ``script`` (written as ``stamp.py``);
    ``body`` adds its arms and workloads."""
    (tmp_path / "stamp.py").write_text(script)
    head = f"""\
name: {name}
question: where does each cell run?
legs:
  here:
    path: {sys.executable}
baseline: {{leg: here}}
"""
    path = tmp_path / "recipe.yaml"
    path.write_text(head + textwrap.dedent(body))
    return path


def stamps(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Each cell's ``out/stamp.json``, by cell id."""
    return {
        p.parent.parent.name: json.loads(p.read_text())
        for p in (run_dir / "cells").glob("*/out/stamp.json")
    }


def overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two stamped cells ran at the same time."""
    return float(a["start"]) < float(b["end"]) and float(b["start"]) < float(a["end"])
