"""What ``vllmdiag profile diff`` runs: a profile run's first two sides with a capture,
or two captures given by path; every file written under a directory of its own
(``<run>/diff`` for a profile run, otherwise a new ``runs/profile-diff-<time>``, never
beside an input)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.profile.capture import GPU_BACKENDS, Backend
from vllmdiag.jobs.profile.diff.captures import diff_gpu, diff_pyspy, is_pyspy, label
from vllmdiag.jobs.profile.diff.report import DiffReport
from vllmdiag.jobs.profile.results import ProfileRun, load_run
from vllmdiag.readers.traces import leg as legmod
from vllmdiag.readers.traces import pyspy
from vllmdiag.services.outdir import ensure_dir


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
