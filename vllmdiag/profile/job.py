"""The profile jobs the CLI calls: capture two sides and diff them; diff two captures.

Each returns a frozen result the CLI renders (and prints as ``--json``); every file is
written atomically under a directory of its own: ``<run>/diff`` for a profile run,
otherwise a new ``runs/profile-diff-<time>`` (never beside an input).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vllmdiag import atomic
from vllmdiag.errors import VllmdiagError
from vllmdiag.profile import diff as diffmod
from vllmdiag.profile import leg as legmod
from vllmdiag.profile import pyspy, render
from vllmdiag.profile.capture import Workload
from vllmdiag.profile.run import Journal, LegTarget, Observer, ProfileRun, load_run, profile_legs

GPU_BACKENDS = ("torch", "nsys")
_SUFFIXES = (".gz", ".json", ".sqlite", ".txt", ".pyspy", ".folded", ".raw")


@dataclass(frozen=True)
class DiffResult:
    """Two captures compared: the GPU diff (None for a CPU-only py-spy comparison), the
    py-spy frames whose share moved, and the files written."""

    names: tuple[str, str]
    out: Path
    diff: diffmod.Diff | None
    frames: tuple[pyspy.FrameRow, ...]
    files: tuple[tuple[str, Path], ...]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = self.diff.to_json() if self.diff is not None else {}
        data["pyspy"] = diffmod.jsonable([f.__dict__ for f in self.frames])
        data["files"] = {k: str(v) for k, v in self.files}
        return data


@dataclass(frozen=True)
class ProfileOutcome:
    """A capture run and its diff (None when fewer than two sides captured)."""

    run: ProfileRun
    result: DiffResult | None

    @property
    def failed(self) -> bool:
        """Some capture failed and nothing could be compared."""
        return self.result is None and any(not c.ok for c in self.run.captures)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"run": self.run.to_json()}
        if self.result is not None:
            key = "diff" if self.result.diff is not None else "pyspy"
            data = self.result.to_json()
            out[key] = data if key == "diff" else data["pyspy"]
        return out


def fresh_dir(runs_root: Path, prefix: str) -> Path:
    """A new directory ``runs_root/prefix-<UTC time>`` (suffixed if that exists)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = runs_root / f"{prefix}-{stamp}"
    n = 1
    while True:
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            n += 1
            path = runs_root / f"{prefix}-{stamp}-{n}"


def targets_from_paths(values: Sequence[str]) -> list[LegTarget]:
    """``NAME=PATH`` of existing venvs (or their pythons), adopted through the env cache."""
    from vllmdiag.envs import EnvCache, LegSpec

    out = []
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise VllmdiagError(
                f"--leg takes NAME=PATH, not {value!r}",
                hint="e.g. --leg old=/opt/venvs/vllm-0.18 (a venv or its python)",
            )
        env = EnvCache().ensure(LegSpec(name, existing=Path(path).expanduser()))
        out.append(LegTarget(name, env.python))
    return out


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
    base = path if path.is_dir() else path.parent
    return pyspy.find(base) or pyspy.find(base.parent / "pyspy")


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


def diff_gpu(a: Path, b: Path, name_a: str, name_b: str, top: int, out: Path) -> DiffResult:
    """Diff two GPU captures (and the py-spy outputs beside them, when both have some)."""
    la, lb = legmod.load(a, name_a), legmod.load(b, name_b)
    if la.name == lb.name:  # e.g. two files both called trace.json.gz
        la, lb = replace(la, name=f"A:{la.name}"), replace(lb, name=f"B:{lb.name}")
    d = diffmod.diff(la, lb, top=top)
    frames: tuple[pyspy.FrameRow, ...] = ()
    sa, sb = _pyspy_near(a), _pyspy_near(b)
    if sa and sb:
        frames = pyspy.diff(merge_spy(sa), merge_spy(sb), top=top)
    files = render.write(d, out, frames)
    atomic.write_json(out / "diff.json", {**d.to_json(), "pyspy": [f.__dict__ for f in frames]})
    files["json"] = out / "diff.json"
    return DiffResult((la.name, lb.name), out, d, frames, tuple(files.items()))


def diff_pyspy(a: Path, b: Path, name_a: str, name_b: str, top: int, out: Path) -> DiffResult:
    """The CPU side only: py-spy frames whose sample share moved."""
    fa, fb = pyspy.find(a), pyspy.find(b)
    if not fa or not fb:
        raise VllmdiagError(
            f"no py-spy output in {a if not fa else b}",
            hint="record with: py-spy record --format raw -o NAME.pyspy.txt",
        )
    frames = pyspy.diff(merge_spy(fa), merge_spy(fb), top=top)
    atomic.write_text(out / "summary.md", render.pyspy_markdown(name_a, name_b, frames))
    atomic.write_json(out / "pyspy.json", [f.__dict__ for f in frames])
    files = (("summary", out / "summary.md"), ("json", out / "pyspy.json"))
    return DiffResult((name_a, name_b), out, None, frames, files)


def diff_run(run: ProfileRun, top: int, out: Path | None = None) -> DiffResult | None:
    """The first two sides of a run with a GPU capture, else with py-spy output; None
    when fewer than two sides have either."""
    dest = out or run.out / "diff"
    gpu = run.sides(GPU_BACKENDS)
    if len(gpu) >= 2:
        (na, pa), (nb, pb) = gpu[:2]
        return diff_gpu(pa, pb, na, nb, top, dest)
    spy = run.sides(("py-spy",))
    if len(spy) >= 2:
        (na, pa), (nb, pb) = spy[:2]
        return diff_pyspy(pa, pb, na, nb, top, dest)
    return None


def diff_inputs(
    a: Path, b: Path | None, *, out: Path | None, top: int, runs_root: Path
) -> DiffResult:
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
        result = diff_run(run, top, out)
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
                f"side's capture: {path}/SIDE/torch",
            )
    for path in (a, b):
        legmod.trace_files(path)  # a missing path: its error comes before any output
    dest = out or fresh_dir(runs_root, "profile-diff")
    if is_pyspy(a) and is_pyspy(b):
        return diff_pyspy(a, b, label(a), label(b), top, dest)
    return diff_gpu(a, b, label(a), label(b), top, dest)


def capture_and_diff(
    targets: Sequence[LegTarget],
    workload: Workload,
    out: Path,
    backends: Sequence[str],
    top: int,
    *,
    observer: Observer | None = None,
    journal: Journal | None = None,
    timeout: float | None = 3600,
) -> ProfileOutcome:
    """Capture every side serially into ``out``, then diff the first two."""
    run = profile_legs(targets, workload, out, backends, observer=observer, journal=journal,
                       timeout=timeout)  # fmt: skip
    return ProfileOutcome(run, diff_run(run, top))
