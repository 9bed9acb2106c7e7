"""Run one workload on one leg under a capture backend: torch, nsys or py-spy.

Everything goes through :mod:`vllmdiag.proc`. A capture's outcome is a frozen
:class:`CaptureResult`; a failed one says why and keeps its log, and never leaves files
that read as a result (an nsys run that could not finalize its report has its partial
``.qdstrm`` moved under ``failed/``).

Two kinds of workload: a Python script (run under vllmdiag's torch launcher, which adds
the NVTX/``record_function`` phases) and a vLLM command line (``vllm bench ...``), whose
own profiler is switched on in the spelling that leg's CLI shows (:mod:`vllm_probe`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vllmdiag import atomic, probes, proc
from vllmdiag.errors import VllmdiagError
from vllmdiag.profile import vllm_probe

BACKENDS = ("torch", "nsys", "py-spy")
PYTHON = "{python}"  # in a workload's argv: the leg's interpreter
OUT_DIR = "{out_dir}"  # in a workload's argv: this capture's own directory


@dataclass(frozen=True)
class Workload:
    """What to run: a script (driven by the launcher) or a command (``argv``)."""

    script: Path | None = None
    script_args: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    warmup: int = 3
    steps: int = 10
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_vllm(self) -> bool:
        return bool(self.argv) and Path(self.argv[0]).name == "vllm"


@dataclass(frozen=True)
class CaptureResult:
    leg: str
    backend: str
    ok: bool
    out: Path
    files: tuple[str, ...]
    reason: str | None
    elapsed_s: float
    log: Path
    notes: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: object, root: Path | None = None) -> CaptureResult:
        """A capture as ``profile.json`` holds it; ``root`` rebases its paths onto where
        the run directory is now (it may have been moved since)."""
        if not isinstance(data, dict):
            raise ValueError("a capture is not a JSON object")
        try:
            out, log = Path(str(data["out"])), Path(str(data["log"]))
            if root is not None:
                out = root / str(data["leg"]) / out.name
                log = out / log.name
            elapsed = data["elapsed_s"]
            if not isinstance(elapsed, (int, float)) or isinstance(elapsed, bool):
                raise ValueError(f"elapsed_s is {elapsed!r}")
            reason = data["reason"]
            return cls(
                leg=str(data["leg"]),
                backend=str(data["backend"]),
                ok=data["ok"] is True,
                out=out,
                files=tuple(str(f) for f in data["files"]),
                reason=None if reason is None else str(reason),
                elapsed_s=float(elapsed),
                log=log,
                notes=tuple(str(n) for n in data.get("notes", ())),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"a capture lacks or garbles {exc}") from None

    def to_json(self) -> dict[str, object]:
        return {
            "leg": self.leg,
            "backend": self.backend,
            "ok": self.ok,
            "out": str(self.out),
            "files": list(self.files),
            "reason": self.reason,
            "elapsed_s": round(self.elapsed_s, 3),
            "log": str(self.log),
            "notes": list(self.notes),
        }


def _tail(log: Path, n: int = 1500) -> str:
    try:
        return log.read_text(errors="replace")[-n:].strip()
    except OSError:
        return ""


def _fill(tokens: tuple[str, ...], python: Path, out: Path) -> list[str]:
    return [str(python) if t == PYTHON else t.replace(OUT_DIR, str(out)) for t in tokens]


def _launcher_argv(python: Path, w: Workload, out: Path, profile: bool) -> list[str]:
    assert w.script is not None
    argv = [str(python), str(probes.script("torch_launch")), "--script", str(w.script),
            "--out", str(out), "--warmup", str(w.warmup), "--steps", str(w.steps)]  # fmt: skip
    if not profile:
        argv.append("--no-profile")
    return [*argv, "--", *_fill(w.script_args, python, out)]


def _leg_argv(python: Path, w: Workload, out: Path) -> list[str]:
    """The command with ``{python}`` made the leg's interpreter, ``{out_dir}`` this
    capture's directory, and a bare program (``vllm``) resolved inside the leg."""
    argv = _fill(w.argv, python, out)
    prog = python.parent / argv[0]
    return [str(prog) if "/" not in argv[0] and prog.exists() else argv[0], *argv[1:]]


def find_tool(name: str, python: Path | None = None) -> Path | None:
    """``name`` in the leg's bin directory first, then on PATH."""
    if python is not None and (python.parent / name).exists():
        return python.parent / name
    found = shutil.which(name)
    return Path(found) if found else None


def capture(
    leg: str,
    python: Path,
    w: Workload,
    out: Path,
    backend: str = "torch",
    *,
    environ: Mapping[str, str] | None = None,
    timeout: float | None = 3600,
) -> CaptureResult:
    """Run ``w`` on the leg whose interpreter is ``python`` under ``backend``."""
    if backend not in BACKENDS:
        raise VllmdiagError(
            f"unknown capture backend {backend!r}", hint=f"use one of {', '.join(BACKENDS)}"
        )
    if w.script is None and not w.argv:
        raise VllmdiagError("a workload needs a script or a command line")
    dest = out / backend.replace("-", "")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    log = dest / "capture.log"
    env = dict(proc.clean_environ() if environ is None else environ)
    env.update(w.env)
    env["PATH"] = f"{python.parent}:{env.get('PATH', '')}"
    notes: list[str] = []
    if backend == "torch":
        if w.script is not None:
            argv = _launcher_argv(python, w, dest, profile=True)
        elif not w.is_vllm:
            why = "the torch profiler needs a Python script or a vllm command; use nsys/py-spy"
            return _failed(leg, backend, dest, log, why, notes)
        else:
            argv = _leg_argv(python, w, dest)
            extra, extra_env, why = vllm_probe.profiler_switch(python, argv, env, dest)
            argv += extra
            env.update(extra_env)
            notes.append(why)
    elif backend == "nsys":
        nsys = find_tool("nsys", python)
        if nsys is None:
            return _failed(leg, backend, dest, log, "no nsys on PATH or in the leg", notes)
        inner = (
            _launcher_argv(python, w, dest, profile=False)
            if w.script is not None
            else _leg_argv(python, w, dest)
        )
        env.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
        argv = [str(nsys), "profile", "--trace=cuda,nvtx,osrt", "--sample=none",
                "--trace-fork-before-exec=true", "--cuda-graph-trace=node",
                "--force-overwrite=true", "-o", str(dest / "report"), *inner]  # fmt: skip
    else:
        spy = find_tool("py-spy", python)
        if spy is None:
            return _failed(leg, backend, dest, log, "py-spy is not installed", notes)
        inner = (
            _launcher_argv(python, w, dest, profile=False)
            if w.script is not None
            else _leg_argv(python, w, dest)
        )
        argv = [str(spy), "record", "--nonblocking", "--subprocesses", "--format", "raw",
                "--rate", "200", "-o", str(dest / "profile.pyspy.txt"), "--", *inner]  # fmt: skip
    atomic.write_text(dest / "argv.json", json.dumps(argv))
    done = proc.run(argv, env=env, timeout=timeout, log=log)
    if done.interrupted:
        raise KeyboardInterrupt
    if backend == "nsys":
        return _finish_nsys(leg, dest, log, done, notes)
    if not done.ok:
        why = "timed out" if done.timed_out else f"exited {done.rc}"
        return _failed(leg, backend, dest, log, f"{why}: {_tail(log, 600)}", notes, done.elapsed_s)
    files = _outputs(dest, backend)
    if not files:
        return _failed(leg, backend, dest, log, "the run wrote no trace", notes, done.elapsed_s)
    return CaptureResult(leg, backend, True, dest, files, None, done.elapsed_s, log, tuple(notes))


def _outputs(dest: Path, backend: str) -> tuple[str, ...]:
    if backend == "py-spy":
        pats: tuple[str, ...] = (".pyspy.txt",)
    elif backend == "nsys":
        pats = (".sqlite",)
    else:
        pats = (".json", ".json.gz")
    skip = {"meta.json", "argv.json"}
    return tuple(
        str(p.relative_to(dest))
        for p in sorted(dest.rglob("*"))
        if p.is_file() and p.name.endswith(pats) and p.name not in skip
    )


def _failed(
    leg: str,
    backend: str,
    dest: Path,
    log: Path,
    reason: str,
    notes: Sequence[str],
    elapsed: float = 0.0,
) -> CaptureResult:
    atomic.write_text(dest / "FAILED.txt", reason + "\n")
    return CaptureResult(leg, backend, False, dest, (), reason, elapsed, log, tuple(notes))


def _finish_nsys(
    leg: str, dest: Path, log: Path, done: proc.Completed, notes: list[str]
) -> CaptureResult:
    rep = dest / "report.nsys-rep"
    if not rep.exists():
        partial = sorted(dest.glob("*.qdstrm"))
        failed = dest / "failed"
        failed.mkdir(exist_ok=True)
        for p in partial:
            p.replace(failed / p.name)
        what = (
            f"nsys wrote {', '.join(p.name for p in partial)} but could not finalize a report"
            if partial
            else f"nsys wrote no report (exit {done.rc})"
        )
        return _failed(leg, "nsys", dest, log, f"{what}: {_tail(log, 400)}", notes, done.elapsed_s)
    nsys = find_tool("nsys")
    export = [str(nsys or "nsys"), "export", "--type", "sqlite", "--force-overwrite", "true",
              "--output", str(dest / "report.sqlite"), str(rep)]  # fmt: skip
    exported = proc.run(export, timeout=1800, log=log)
    if not exported.ok or not (dest / "report.sqlite").exists():
        return _failed(leg, "nsys", dest, log, "nsys export to SQLite failed", notes)
    if not done.ok:
        notes.append(f"the workload exited {done.rc} under nsys; the report covers what ran")
    return CaptureResult(
        leg, "nsys", True, dest, ("report.sqlite",), None, done.elapsed_s, log, tuple(notes)
    )
