"""Two captures diffed: GPU traces (Kineto or nsys, with the sides' py-spy output when
both have some) or py-spy output alone. Each writes its files atomically into the
directory it is given and returns the frozen result the CLI renders."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from vllmdiag import codec
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.profile.diff import render
from vllmdiag.jobs.profile.diff import time_diff as diffmod
from vllmdiag.jobs.profile.diff.report import CpuDiff, GpuDiff, gpu_report
from vllmdiag.printable import printable
from vllmdiag.readers.traces import leg as legmod
from vllmdiag.readers.traces import pyspy
from vllmdiag.readers.traces.leg import CAPTURE_RECORD
from vllmdiag.services import atomic
from vllmdiag.services.outdir import ensure_dir, writes

_SUFFIXES = (".gz", ".json", ".sqlite", ".txt", ".pyspy", ".folded", ".raw", ".pt.trace")


def label(path: Path) -> str:
    """A side's name from its path: the file's stem, or a capture dir's leg dir."""
    if path.is_file():
        name = path.name
        for suffix in _SUFFIXES:
            name = name.removesuffix(suffix)
        return name
    if path.name in ("torch", "nsys", "pyspy") and path.parent.name:
        return path.parent.name
    return path.name


def is_pyspy(path: Path) -> bool:
    """A py-spy output file, or a directory with py-spy output and no GPU trace."""
    if path.is_file():
        return not path.name.endswith(legmod.TRACE_SUFFIXES)
    return path.is_dir() and bool(pyspy.find(path)) and not legmod.trace_files(path)


def _pyspy_near(path: Path) -> list[Path]:
    """The py-spy outputs that belong to a capture: those in its directory (a capture
    directory, or the one a trace file lies in when that is a capture's: it holds the
    launcher's meta.json or vllmdiag's capture.json), else only the trace file's own
    (``NAME.folded``, ``NAME.pyspy.txt``, ``NAME.*.folded`` beside ``NAME.json``): a
    trace in a downloads folder does not take every unrelated profile there."""
    if path.is_dir():
        return pyspy.find(path) or pyspy.find(path.parent / "pyspy")
    base = path.parent
    if (base / "meta.json").is_file() or (base / CAPTURE_RECORD).is_file():
        return pyspy.find(base) or pyspy.find(base.parent / "pyspy")
    stem = _trace_stem(path.name)
    return sorted(
        p
        for p in base.iterdir()
        if p.is_file()
        and p.name.endswith((".folded", ".pyspy.txt"))
        and (p.name.startswith(stem + ".") or _trace_stem(p.name) == stem)
    )


def _trace_stem(name: str) -> str:
    for suffix in (".json.gz", ".pt.trace.json", ".json", ".sqlite", ".folded", ".pyspy.txt"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def merge_spy(files: Sequence[Path]) -> pyspy.PySpyProfile:
    """One profile from several py-spy outputs (one per process or rank)."""
    parts = [pyspy.read(f) for f in files]
    if len(parts) == 1:
        return parts[0]
    inc: dict[str, int] = {}
    own: dict[str, int] = {}
    for p in parts:
        for k, v in p.inclusive.items():
            inc[k] = inc.get(k, 0) + v
        for k, v in p.own.items():
            own[k] = own.get(k, 0) + v
    return pyspy.PySpyProfile(",".join(p.source for p in parts), sum(p.samples for p in parts),
                              inc, own, sum(p.processes for p in parts))  # fmt: skip


def diff_gpu(
    a: Path,
    b: Path,
    name_a: str,
    name_b: str,
    top: int,
    out: Path,
    spy: tuple[list[Path], list[Path]] | None = None,
) -> GpuDiff:
    """Diff two GPU captures, and the py-spy outputs of the sides when both have some
    (``spy``; default: found beside the captures)."""
    la, lb = legmod.load(a, name_a), legmod.load(b, name_b)
    if la.name == lb.name:  # e.g. two files both called trace.json.gz
        la, lb = replace(la, name=f"A:{la.name}"), replace(lb, name=f"B:{lb.name}")
    d = diffmod.diff(la, lb, top=top)
    sa, sb = spy if spy is not None else (_pyspy_near(a), _pyspy_near(b))
    frames = pyspy.diff(merge_spy(sa), merge_spy(sb), top=top) if sa and sb else ()
    ensure_dir(out)
    with writes(out, "write the diff"):
        files = {**render.write(d, out, frames), "json": out / "diff.json"}
        report = gpu_report(d, frames, files)
        atomic.write_json(out / "diff.json", codec.dump(report))
    return report


def diff_pyspy(a: Path, b: Path, name_a: str, name_b: str, top: int, out: Path) -> CpuDiff:
    """The CPU side only: py-spy frames whose sample share moved."""
    fa, fb = pyspy.find(a), pyspy.find(b)
    if not fa or not fb:
        raise VllmdiagError(
            f"no py-spy output in {a if not fa else b}",
            hint="record with: py-spy record --format raw -o NAME.pyspy.txt",
        )
    frames = pyspy.diff(merge_spy(fa), merge_spy(fb), top=top)
    ensure_dir(out)
    with writes(out, "write the diff"):
        md = printable(render.pyspy_markdown(name_a, name_b, frames))
        atomic.write_text(out / "summary.md", md)
        atomic.write_json(out / "pyspy.json", codec.dump(frames))
    files = {"summary": out / "summary.md", "json": out / "pyspy.json"}
    return CpuDiff((name_a, name_b), frames, files)
