"""The profile diffs the CLI calls, and the end of every capture run.

Each returns a frozen result the CLI renders (and prints as ``--json`` through the
codec); every file is written atomically under a directory of its own: ``<run>/diff``
for a profile run, otherwise a new ``runs/profile-diff-<time>`` (never beside an input).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from vllmdiag import codec
from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note, Observer
from vllmdiag.jobs.profile.capture import GPU_BACKENDS, RECORD, Backend, CaptureResult
from vllmdiag.jobs.profile.diff import render
from vllmdiag.jobs.profile.diff import time_diff as diffmod
from vllmdiag.jobs.profile.diff.report import CpuDiff, DiffReport, GpuDiff, gpu_report
from vllmdiag.jobs.profile.results import ProfileOutcome, ProfileRun, load_run, write_run
from vllmdiag.model.outcome import CellResult
from vllmdiag.printable import printable
from vllmdiag.readers.traces import leg as legmod
from vllmdiag.readers.traces import pyspy
from vllmdiag.services import atomic
from vllmdiag.services.outdir import ensure_dir, writes

_SUFFIXES = (".gz", ".json", ".sqlite", ".txt", ".pyspy", ".folded", ".raw", ".pt.trace")


def fresh_dir(runs_root: Path, prefix: str) -> Path:
    """A new directory ``runs_root/prefix-<UTC time>`` (suffixed if that exists)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = runs_root / f"{prefix}-{stamp}"
    n = 1
    ensure_dir(runs_root, flag="--runs-root")
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:  # another diff in the same second: the next suffix
            n += 1
            path = runs_root / f"{prefix}-{stamp}-{n}"
        except OSError as exc:  # /proc, a read-only place, a file in the way
            raise VllmdiagError(
                f"cannot make a run directory here: {exc.strerror or exc}",
                where=str(runs_root),
                hint="give --runs-root a writable directory (or --out a new one)",
            ) from None


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
    if (base / "meta.json").is_file() or (base / RECORD).is_file():
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


def diff_run(run: ProfileRun, top: int, out: Path | None = None) -> DiffReport | None:
    """The first two sides of a run with a GPU capture, else with py-spy output; None
    when fewer than two sides have either."""
    dest = out or run.out / "diff"
    gpu = run.sides(GPU_BACKENDS)
    if len(gpu) >= 2:
        (na, pa), (nb, pb) = gpu[:2]
        spy = [run.capture(n, (Backend.PYSPY,)) for n in (na, nb)]
        both = (pyspy.find(spy[0].out), pyspy.find(spy[1].out)) if spy[0] and spy[1] else None
        return diff_gpu(pa, pb, na, nb, top, dest, both)
    cpu = run.sides((Backend.PYSPY,))
    if len(cpu) >= 2:
        (na, pa), (nb, pb) = cpu[:2]
        return diff_pyspy(pa, pb, na, nb, top, dest)
    return None


def diff_inputs(
    a: Path, b: Path | None, *, out: Path | None, top: int, runs_root: Path
) -> DiffReport:
    """``vllmdiag profile diff``: a profile run directory, or two captures (run or
    capture directories, Kineto or nsys traces, py-spy outputs)."""
    if b is None:
        run = load_run(a)
        if run is None:
            raise VllmdiagError(
                "one argument must be a profile run directory (with profile.json)",
                where=str(a),
                hint="give two captures: vllmdiag profile diff A B",
            )
        result = diff_run(run, top, ensure_dir(out) if out is not None else None)
        if result is None:
            raise VllmdiagError("the run has fewer than two sides with a capture to compare",
                                where=str(a), hint="see its run.jsonl for why")  # fmt: skip
        return result
    for path in (a, b):
        if path.is_dir() and (path / "profile.json").is_file():
            raise VllmdiagError(
                "this is a whole profile run (all its sides), not one capture",
                where=str(path),
                hint=f"diff its sides with: vllmdiag profile diff {path}; or name one "
                f"side's capture directory inside it",
            )
    for path in (a, b):
        legmod.trace_files(path)  # a missing path: its error comes before any output
    dest = ensure_dir(out) if out is not None else fresh_dir(runs_root, "profile-diff")
    if is_pyspy(a) and is_pyspy(b):
        return diff_pyspy(a, b, label(a), label(b), top, dest)
    return diff_gpu(a, b, label(a), label(b), top, dest)


def window_warnings(captures: Sequence[CaptureResult]) -> tuple[str, ...]:
    """vLLM sides whose profiler could not be given the same captured window."""
    how = {c.leg: c.notes for c in captures if c.backend is Backend.TORCH and c.ok and c.notes}
    if len(set(how.values())) > 1:
        detail = "; ".join(f"{side}: {' '.join(n)}" for side, n in how.items())
        return (f"the sides' profilers were switched on differently ({detail}): the captured "
                "windows may differ, compare per-step figures",)  # fmt: skip
    return ()


def outcome_of(
    run_dir: Path,
    captures: Sequence[CaptureResult],
    top: int,
    emit: Observer[Note],
    *,
    cells: Sequence[CellResult] = (),
    interrupted: bool = False,
    stopped_by: str | None = None,
) -> ProfileOutcome:
    """The end of a capture run: its warnings said, ``profile.json`` written, and (unless
    it was stopped) its first two sides diffed."""
    warnings = window_warnings(captures)
    for w in warnings:
        emit(Note("warning", w))
    run = ProfileRun(run_dir, tuple(captures), warnings)
    write_run(run)
    result = None if interrupted else diff_run(run, top)
    return ProfileOutcome(
        run,
        diff=result if isinstance(result, GpuDiff) else None,
        pyspy=result if isinstance(result, CpuDiff) else None,
        cells=tuple(cells),
        interrupted=interrupted,
        stopped_by=stopped_by,
    )
