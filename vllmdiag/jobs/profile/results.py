"""A profile run's outcome: its captures (``profile.json``) and the diff of its sides.

``profile.json`` is a :class:`ProfileRun` through :mod:`vllmdiag.codec`, its paths
relative to the run directory, so a run directory that was moved still reads back
(``load_run(path) == run`` with ``run.out == path``). Schema 1 (absolute paths under
``<run>/<side>/<backend>/``) is still read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllmdiag import codec
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.profile.capture import Backend, CaptureResult
from vllmdiag.jobs.profile.diff.report import CpuDiff, GpuDiff
from vllmdiag.model.outcome import CellResult
from vllmdiag.services import atomic, redact

SCHEMA = 2
#: profile.json schemas this vllmdiag reads.
READABLE = (1, 2)
FILE = "profile.json"


@dataclass(frozen=True)
class ProfileRun:
    """Where a profile run is, each capture it made (in run order) and its warnings."""

    out: Path
    captures: tuple[CaptureResult, ...]
    warnings: tuple[str, ...] = ()

    def capture(self, side: str, backends: Sequence[Backend]) -> CaptureResult | None:
        """The side's good capture of the first of ``backends`` that has one."""
        for which in backends:
            for c in self.captures:
                if c.leg == side and c.backend is which and c.ok:
                    return c
        return None

    def sides(self, backends: Sequence[Backend]) -> list[tuple[str, Path]]:
        """(side, capture directory) of each side with a good capture of one of
        ``backends`` (the first that has one), in run order."""
        out = []
        for side in dict.fromkeys(c.leg for c in self.captures):
            found = self.capture(side, backends)
            if found is not None:
                out.append((side, found.out))
        return out


@dataclass(frozen=True)
class ProfileOutcome:
    """A profile run: its captures, the diff of its first two sides (``diff`` on the
    GPU, else ``pyspy``; neither when fewer than two sides captured), the cells that
    captured them (a recipe's run) and whether a signal stopped it."""

    run: ProfileRun
    diff: GpuDiff | None = None
    pyspy: CpuDiff | None = None
    cells: tuple[CellResult, ...] = ()
    interrupted: bool = False
    stopped_by: str | None = None

    @property
    def failed(self) -> bool:
        """Some capture failed and nothing could be compared."""
        compared = self.diff is not None or self.pyspy is not None
        return not compared and any(not c.ok for c in self.run.captures)


def write_run(run: ProfileRun) -> Path:
    """``profile.json`` of ``run``, written atomically in its directory."""
    file = run.out / FILE
    data = codec.dump(dataclasses.replace(run, out=Path("."), captures=tuple(
        _moved(c, run.out, Path(".")) for c in run.captures)))  # fmt: skip
    atomic.write_json(file, redact.data({"schema": SCHEMA, **data}))
    return file


def _moved(c: CaptureResult, old: Path, new: Path) -> CaptureResult:
    """``c`` with its paths under ``old`` made paths under ``new``."""

    def rebase(p: Path) -> Path:
        try:
            return new / p.relative_to(old)
        except ValueError:
            return p

    return dataclasses.replace(c, out=rebase(c.out), log=rebase(c.log))


def load_run(path: Path) -> ProfileRun | None:
    """The run a directory's ``profile.json`` describes, its paths under ``path``; None
    if ``path`` is not a profile run directory. A ``profile.json`` that does not read
    back is an error."""
    file = path / FILE
    if not file.is_file():
        return None
    try:
        data = atomic.read_json(file)
        if not isinstance(data, dict):
            raise ValueError(f"a JSON {type(data).__name__}, not an object")
        schema = data.get("schema")
        if schema not in READABLE:
            raise ValueError(f"schema {schema!r}; this vllmdiag reads "
                             + ", ".join(map(str, READABLE)))  # fmt: skip
        if schema == 1:
            return codec.load(ProfileRun, _legacy(data, path))
        body = {k: v for k, v in data.items() if k != "schema"}
        run = codec.load(ProfileRun, body)
    except (OSError, ValueError) as exc:  # JSONDecodeError and ValidationError included
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VllmdiagError(
            f"profile.json does not read back: {first}",
            where=str(file),
            hint="it was written by another vllmdiag version, or edited; diff the capture "
            "directories inside it instead: vllmdiag profile diff DIR_A DIR_B",
        ) from None
    return dataclasses.replace(
        run, out=path, captures=tuple(_moved(c, Path("."), path) for c in run.captures)
    )


def _legacy(data: dict[str, Any], root: Path) -> dict[str, Any]:
    """Schema 1: absolute paths of ``<run>/<side>/<backend>/`` and its ``capture.log``,
    rebased onto where the run directory is now."""
    caps = data.get("captures")
    if not isinstance(caps, list):
        raise ValueError("'captures' is not a list")
    out = []
    for c in caps:
        if not isinstance(c, dict) or not {"leg", "out", "log"} <= c.keys():
            raise ValueError("a capture lacks leg, out or log")
        dest = root / str(c["leg"]) / Path(str(c["out"])).name
        out.append({**c, "out": str(dest), "log": str(dest / Path(str(c["log"])).name)})
    return {"out": str(root), "captures": out, "warnings": data.get("warnings", [])}
