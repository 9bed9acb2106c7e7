"""py-spy's raw (folded) output, read line by line, and the frames whose share moved.

``py-spy record --format raw`` writes one line per distinct stack:
``process 12:"python x.py";thread (0x7f..);main (x.py:9);work (x.py:3) 17``: frames
from the outermost, separated by ``;``, then a space and the sample count. The
process and thread pseudo-frames are kept apart from the Python frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.errors import VllmdiagError


@dataclass(frozen=True)
class PySpyProfile:
    source: str
    samples: int
    inclusive: dict[str, int]  # samples with the frame anywhere on the stack
    own: dict[str, int]  # samples with the frame on top
    processes: int


@dataclass(frozen=True)
class FrameRow:
    frame: str
    a_share: float
    b_share: float
    delta: float  # b_share - a_share, inclusive


def _is_pseudo(frame: str) -> bool:
    return frame.startswith(("process ", "thread (")) or frame == "idle"


def read(path: Path) -> PySpyProfile:
    samples = 0
    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    procs: set[str] = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            stack, _, count_text = line.rpartition(" ")
            try:
                count = int(count_text)
            except ValueError:
                raise VllmdiagError(
                    f"not py-spy raw/folded output: line {lineno} does not end in a count",
                    where=f"{path}:{lineno}",
                    hint="record with: py-spy record --format raw -o FILE",
                ) from None
            frames = stack.split(";")
            py = [fr for fr in frames if not _is_pseudo(fr)]
            procs.update(fr for fr in frames if fr.startswith("process "))
            samples += count
            for fr in set(py):
                inclusive[fr] = inclusive.get(fr, 0) + count
            if py:
                own[py[-1]] = own.get(py[-1], 0) + count
    if samples == 0:
        raise VllmdiagError(
            "py-spy output with no samples: the capture failed",
            where=str(path),
            hint="py-spy needs ptrace rights (root or CAP_SYS_PTRACE) on the target",
        )
    return PySpyProfile(str(path), samples, inclusive, own, len(procs))


def diff(a: PySpyProfile, b: PySpyProfile, top: int = 15) -> tuple[FrameRow, ...]:
    """Frames whose inclusive sample share changed most, largest change first."""
    rows = []
    for fr in a.inclusive.keys() | b.inclusive.keys():
        sa = a.inclusive.get(fr, 0) / a.samples
        sb = b.inclusive.get(fr, 0) / b.samples
        rows.append(FrameRow(fr, sa, sb, sb - sa))
    rows.sort(key=lambda r: (-abs(r.delta), r.frame))
    return tuple(rows[:top])


def find(path: Path) -> list[Path]:
    """py-spy outputs under a leg path (capture directory) or the file itself."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    return sorted(p for p in path.rglob("*") if p.name.endswith((".folded", ".pyspy.txt")))
