"""A profile run beside the failure (``--profile``): which sides were captured, with
which profiler, and where the time went when its diff was written.

The run is read only through the profile package's public loader; if this vllmdiag
cannot read it (a run from another version), the report says so and goes on without.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.profile.results import load_run
from vllmdiag.jobs.report import md

#: The diff's own summary, kept whole up to this size.
SUMMARY_MAX = 32 * 1024


@dataclass(frozen=True)
class Side:
    name: str
    backend: str
    ok: bool
    reason: str


@dataclass(frozen=True)
class ProfileEvidence:
    path: Path
    sides: tuple[Side, ...]
    summary: str | None


def load(path: Path, warn: Callable[[str], None]) -> ProfileEvidence | None:
    hint = "give a directory 'vllmdiag profile' wrote (it holds profile.json)"
    if not path.is_dir():
        raise VllmdiagError("no such directory" if not path.exists() else "not a directory",
                            where=str(path), hint=hint)  # fmt: skip
    if not (path / "profile.json").is_file():
        raise VllmdiagError("not a profile run directory (no profile.json)", where=str(path),
                            hint=hint)  # fmt: skip
    try:
        run = load_run(path)
    except VllmdiagError as exc:
        warn(f"{exc.where or path}: the profile run is left out: {exc.message}")
        return None
    except (TypeError, ValueError, KeyError) as exc:
        warn(f"{path}: this vllmdiag cannot read the profile run ({exc}); left out")
        return None
    if run is None:
        return None
    sides = tuple(Side(c.leg, c.backend.value, c.ok, c.reason or "") for c in run.captures)
    return ProfileEvidence(path, sides, _summary(path / "diff" / "summary.md"))


def _summary(file: Path) -> str | None:
    try:
        if not file.is_file():
            return None
        with open(file, encoding="utf-8", errors="replace") as fh:
            text = fh.read(SUMMARY_MAX + 1)
    except OSError:
        return None
    if len(text) > SUMMARY_MAX:
        text = text[:SUMMARY_MAX].rsplit("\n", 1)[0] + "\n\n(cut: the whole summary is longer)"
    return text.strip() or None


def section(profile: ProfileEvidence) -> str:
    rows = [
        [md.code(s.name), md.cell(s.backend), "yes" if s.ok else "no", md.cell(s.reason or "")]
        for s in profile.sides
    ]
    out = [
        f"Profile run {md.code(profile.path.name)}: "
        f"{md.plural(len(profile.sides), 'capture')} of one workload.",
        "",
        md.table(["side", "profiler", "captured", "why not"], rows),
    ]
    if profile.summary:
        out += ["", md.details("Where the time went (the profile diff's summary)", profile.summary)]
    else:
        out += ["", "Its diff was not written yet: `vllmdiag profile diff RUN` writes it."]
    return "\n".join(out)
