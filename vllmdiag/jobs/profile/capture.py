"""How one workload is captured: its command under a backend, and what the run left.

Three backends: ``torch`` (a Python script runs under vllmdiag's torch launcher, which
adds the NVTX/``record_function`` phases; a vLLM command line gets its own profiler
switched on in the spelling that leg's CLI shows, :mod:`vllm_probe`), ``nsys`` and
``py-spy`` (either kind of workload, wrapped). Pure but for asking the leg's vLLM how
its profiler is spelled and exporting an nsys report; the capture itself runs through
:mod:`vllmdiag.jobs.profile.capture_executor`.

A capture's outcome is a frozen :class:`CaptureResult`; a failed one says why and never
leaves files that read as a result (an nsys run that could not finalize its report has
its partial ``.qdstrm`` moved under ``failed/``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from vllmdiag import probes
from vllmdiag.errors import ProcessError, VllmdiagError
from vllmdiag.jobs.profile import vllm_flags, vllm_probe
from vllmdiag.readers.traces.leg import CAPTURE_RECORD
from vllmdiag.services import atomic, proc

#: Written by vllmdiag into a capture directory, never a trace.
RECORD = CAPTURE_RECORD
ARGV = "argv.json"
FAILED = "FAILED.txt"


class Backend(Enum):
    TORCH = "torch"
    NSYS = "nsys"
    PYSPY = "py-spy"

    @property
    def dirname(self) -> str:
        """The backend in a directory or cell name (``py-spy`` → ``pyspy``)."""
        return self.value.replace("-", "")


BACKENDS = tuple(b.value for b in Backend)
GPU_BACKENDS = (Backend.TORCH, Backend.NSYS)


def backend(name: str) -> Backend:
    """``name`` as a :class:`Backend`, or a clear error."""
    try:
        return Backend(name)
    except ValueError:
        raise VllmdiagError(
            f"unknown capture backend {name!r}", hint=f"use one of {', '.join(BACKENDS)}"
        ) from None


class CaptureUnavailable(ProcessError):
    """The backend cannot capture this workload on this leg (no nsys, a command the
    torch profiler cannot reach, a vLLM whose CLI lists no profiler): the cell is an
    ERROR, never a verdict."""


@dataclass(frozen=True)
class CaptureSettings:
    """Steps run before the profiled window (not captured), and steps captured: the torch
    launcher's for a script, vLLM's profiler ``delay_iterations`` / ``max_iterations``
    for a vllm command."""

    warmup: int = vllm_flags.DELAY_ITERATIONS
    steps: int = vllm_flags.MAX_ITERATIONS


@dataclass(frozen=True)
class CaptureResult:
    """One capture: which side and backend, whether it left a trace, where, and why not.
    ``leg`` names the side; ``cell`` the capture's cell (its directory in the run)."""

    leg: str
    backend: Backend
    ok: bool
    out: Path
    files: tuple[str, ...]
    reason: str | None
    elapsed_s: float
    log: Path
    notes: tuple[str, ...] = ()
    cell: str = ""


@dataclass(frozen=True)
class Command:
    """A workload's command under a backend: argv, what it adds to the environment, and
    how the profiler was switched on (for the journal and the diff's warnings)."""

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def is_script(python: Path, argv: Sequence[str]) -> bool:
    """``{python} SCRIPT.py ...``: a script the torch launcher can drive."""
    return len(argv) >= 2 and argv[0] == str(python) and argv[1].endswith(".py")


def is_vllm(argv: Sequence[str]) -> bool:
    return bool(argv) and Path(argv[0]).name == "vllm"


def find_tool(name: str, python: Path | None = None) -> Path | None:
    """``name`` in the leg's bin directory first, then on PATH."""
    if python is not None and (python.parent / name).exists():
        return python.parent / name
    found = shutil.which(name)
    return Path(found) if found else None


def _launcher(
    python: Path, argv: Sequence[str], dest: Path, s: CaptureSettings, profile: bool
) -> list[str]:
    out = [str(python), str(probes.script("torch_launch")), "--script", argv[1],
           "--out", str(dest), "--warmup", str(s.warmup), "--steps", str(s.steps)]  # fmt: skip
    if not profile:
        out.append("--no-profile")
    return [*out, "--", *argv[2:]]


def _in_leg(python: Path, argv: Sequence[str]) -> list[str]:
    """The command with a bare program (``vllm``) resolved inside the leg."""
    prog = python.parent / argv[0]
    return [str(prog) if "/" not in argv[0] and prog.exists() else argv[0], *argv[1:]]


def command(
    which: Backend,
    python: Path,
    argv: Sequence[str],
    dest: Path,
    settings: CaptureSettings,
    env: Mapping[str, str],
    *,
    script: bool | None = None,
) -> Command:
    """How to run ``argv`` (the workload, rendered for the leg of ``python``) so that
    ``which`` captures it into ``dest``. ``script``: whether ``argv`` is ``python
    SCRIPT ...`` for the launcher (None: :func:`is_script` decides)."""
    launch = is_script(python, argv) if script is None else script
    if which is Backend.TORCH:
        if launch:
            return Command(tuple(_launcher(python, argv, dest, settings, profile=True)))
        if not is_vllm(argv):
            raise CaptureUnavailable(
                "the torch profiler needs a Python script or a vllm command",
                hint="capture this command with -c nsys or -c py-spy",
            )
        full = _in_leg(python, argv)
        try:
            extra, extra_env, why = vllm_probe.profiler_switch(
                python, full, env, dest, (settings.warmup, settings.steps)
            )
        except VllmdiagError as exc:
            raise CaptureUnavailable(exc.message, where=exc.where, hint=exc.hint) from None
        return Command((*full, *extra), extra_env, (why,))
    inner = _launcher(python, argv, dest, settings, False) if launch else _in_leg(python, argv)
    if which is Backend.NSYS:
        nsys = find_tool("nsys", python)
        if nsys is None:
            raise CaptureUnavailable(
                "no nsys on PATH or in the leg", hint="install Nsight Systems, or capture "
                "with -c torch"
            )  # fmt: skip
        spawn = {} if "VLLM_WORKER_MULTIPROC_METHOD" in env else {
            "VLLM_WORKER_MULTIPROC_METHOD": "spawn"}  # fmt: skip
        return Command((str(nsys), "profile", "--trace=cuda,nvtx,osrt", "--sample=none",
                        "--trace-fork-before-exec=true", "--cuda-graph-trace=node",
                        "--force-overwrite=true", "-o", str(dest / "report"), *inner),
                       spawn)  # fmt: skip
    spy = find_tool("py-spy", python)
    if spy is None:
        raise CaptureUnavailable("py-spy is not installed", hint="pip install py-spy")
    return Command((str(spy), "record", "--nonblocking", "--subprocesses", "--format", "raw",
                    "--rate", "200", "-o", str(dest / "profile.pyspy.txt"), "--",
                    *inner))  # fmt: skip


def _tail(log: Path, n: int) -> str:
    try:
        return log.read_text(errors="replace")[-n:].strip()
    except OSError:
        return ""


def outputs(dest: Path, which: Backend) -> tuple[str, ...]:
    """The files a capture left that a diff reads, relative to ``dest``."""
    if which is Backend.PYSPY:
        pats: tuple[str, ...] = (".pyspy.txt",)
    elif which is Backend.NSYS:
        pats = (".sqlite",)
    else:
        pats = (".json", ".json.gz")
    skip = {"meta.json", ARGV, RECORD}
    return tuple(
        str(p.relative_to(dest))
        for p in sorted(dest.rglob("*"))
        if p.is_file() and p.name.endswith(pats) and p.name not in skip
    )


def failed(
    side: str,
    which: Backend,
    dest: Path,
    log: Path,
    reason: str,
    notes: Sequence[str] = (),
    elapsed: float = 0.0,
    cell: str = "",
) -> CaptureResult:
    """A capture that left no result, and a ``FAILED.txt`` beside it saying why."""
    atomic.write_text(dest / FAILED, reason + "\n")
    return CaptureResult(side, which, False, dest, (), reason, round(elapsed, 3), log,
                         tuple(notes), cell)  # fmt: skip


def finish(
    side: str, which: Backend, cmd: Command, dest: Path, log: Path, done: proc.Completed,
    cell: str = "",
) -> CaptureResult:  # fmt: skip
    """What a capture run came to, from how it ended and the files it left."""
    notes = list(cmd.notes)
    if which is Backend.NSYS:
        return _finish_nsys(side, cmd, dest, log, done, notes, cell)
    if not done.ok:
        why = "timed out" if done.timed_out else f"exited {done.rc}"
        return failed(side, which, dest, log, f"{why}: {_tail(log, 600)}", notes,
                      done.elapsed_s, cell)  # fmt: skip
    files = outputs(dest, which)
    if not files:
        return failed(side, which, dest, log, "the run wrote no trace", notes, done.elapsed_s,
                      cell)  # fmt: skip
    return CaptureResult(side, which, True, dest, files, None, round(done.elapsed_s, 3), log,
                         tuple(notes), cell)  # fmt: skip


def _finish_nsys(
    side: str, cmd: Command, dest: Path, log: Path, done: proc.Completed, notes: list[str],
    cell: str,
) -> CaptureResult:  # fmt: skip
    nsys = Backend.NSYS
    rep = dest / "report.nsys-rep"
    if not rep.exists():
        partial = sorted(dest.glob("*.qdstrm"))
        failed_dir = dest / "failed"
        failed_dir.mkdir(exist_ok=True)
        for p in partial:
            p.replace(failed_dir / p.name)
        what = (
            f"nsys wrote {', '.join(p.name for p in partial)} but could not finalize a report"
            if partial
            else f"nsys wrote no report (exit {done.rc})"
        )
        return failed(side, nsys, dest, log, f"{what}: {_tail(log, 400)}", notes,
                      done.elapsed_s, cell)  # fmt: skip
    export = [cmd.argv[0], "export", "--type", "sqlite", "--force-overwrite", "true",
              "--output", str(dest / "report.sqlite"), str(rep)]  # fmt: skip
    exported = proc.run(export, timeout=1800, log=log)
    if exported.interrupted:
        raise KeyboardInterrupt
    if not exported.ok or not (dest / "report.sqlite").exists():
        return failed(side, nsys, dest, log, "nsys export to SQLite failed", notes,
                      done.elapsed_s, cell)  # fmt: skip
    if not done.ok:
        notes.append(f"the workload exited {done.rc} under nsys; the report covers what ran")
    return CaptureResult(side, nsys, True, dest, ("report.sqlite",), None,
                         round(done.elapsed_s, 3), log, tuple(notes), cell)  # fmt: skip


def fallback(which: Backend, result: CaptureResult, asked: Sequence[Backend]) -> Backend | None:
    """The backend to try when ``which`` failed: torch after nsys, unless torch was
    asked for anyway."""
    if which is Backend.NSYS and not result.ok and Backend.TORCH not in asked:
        return Backend.TORCH
    return None
