"""Dump a timed-out cell's Python processes with py-spy, just before they are killed.

Called by :func:`vllmdiag.services.proc.run` (its ``on_timeout`` hook) with every live process of
the cell's tree. Each Python process gets ``py-spy dump``: first pausing it (consistent
stacks), then, if that does not return in time (a process stuck in the kernel or the
driver), ``--nonblocking``; each attempt is bounded, and so is the whole. The stacks go
to ``<cell>/hang/py-spy-<pid>.txt``, the typed report to ``<cell>/hang/hang.json``
(atomically). Nothing here raises but a stop (Ctrl-C, a cancelled run: no more dumps, the tree is
ended at once); the kill comes after it whatever happens, and what could not be dumped is
a note (py-spy missing, refused, not a Python process).

py-spy runs from vllmdiag's side (it is one of vllmdiag's dependencies): it is looked for
beside vllmdiag's own interpreter, in its base installation, then on ``PATH``
(``VLLMDIAG_PY_SPY`` names one explicitly).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import sysconfig
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from vllmdiag import codec
from vllmdiag.model.hang import TOP_FRAMES, Frame, HangReport, ProcessDump, StuckAt, ThreadStack
from vllmdiag.services import atomic, proc

HANG_DIR = "hang"
REPORT = "hang.json"
PY_SPY_VAR = "VLLMDIAG_PY_SPY"
#: One attempt at one process; the whole dump; processes dumped at most.
PER_PROCESS_S = 10.0
BUDGET_S = 60.0
MAX_PROCESSES = 32

_PYTHON_EXE = re.compile(r"^(?:python|pypy)\d*(?:\.\d+)*[a-z]?$")
_STDLIB = re.compile(r"/lib(?:64)?/python3\.\d+/(?!.*(?:site|dist)-packages/)")


def find_py_spy(environ: dict[str, str] | None = None) -> Path | None:
    """The py-spy binary vllmdiag runs, or None."""
    env = os.environ if environ is None else environ
    named = env.get(PY_SPY_VAR)
    if named:
        return Path(named) if os.access(named, os.X_OK) else None
    places = [
        Path(sys.executable).parent,
        Path(sysconfig.get_path("scripts")),
        Path(sys.base_prefix) / "bin",
    ]
    for place in places:
        candidate = place / "py-spy"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("py-spy", path=env.get("PATH"))
    return Path(found) if found else None


def dump_tree(
    root: int,
    pids: set[int],
    cell_dir: Path,
    *,
    timeout_s: float,
    killed_at: str,
    silent_s: float | None,
    py_spy: Path | None = None,
    per_process_s: float = PER_PROCESS_S,
    budget_s: float = BUDGET_S,
) -> HangReport:
    """Dump every process of ``pids`` (``root``'s tree) into ``cell_dir/hang``; never
    raises but a stop (a failure to write is a note on the report). ``killed_at``: local
    time of the timeout (ISO); ``silent_s``: how long the log had been silent then."""
    out = cell_dir / HANG_DIR
    notes: list[str] = []
    dumps: list[ProcessDump] = []
    if py_spy is None:
        py_spy = find_py_spy()
    if py_spy is None:
        notes.append(
            "py-spy not found (install vllmdiag's dependencies, or set "
            f"{PY_SPY_VAR} to the py-spy binary): no stacks were dumped"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + budget_s
        for pid, depth in _ordered(root, pids)[:MAX_PROCESSES]:
            dumps.append(_dump_one(pid, depth, out, py_spy, per_process_s, deadline))
        if len(pids) > MAX_PROCESSES:
            notes.append(f"{len(pids) - MAX_PROCESSES} more processes were not dumped")
    except Exception as exc:  # the kill must come whatever happens here
        notes.append(f"the dump failed: {type(exc).__name__}: {exc}")
    report = HangReport(
        timeout_s=timeout_s,
        killed_at=killed_at,
        silent_s=silent_s,
        processes=tuple(dumps),
        stuck=stuck_at(dumps),
        py_spy=str(py_spy or ""),
        notes=tuple(notes)
        + tuple(n for n in _unique_notes(dumps) if not any(m.startswith(n) for m in notes)),
    )
    with contextlib.suppress(OSError, ValueError):
        atomic.write_json(out / REPORT, codec.dump(report))
    return report


def load(cell_dir: Path) -> HangReport | None:
    """The report :func:`dump_tree` left in ``cell_dir``, or None."""
    try:
        return codec.load(HangReport, atomic.read_json(cell_dir / HANG_DIR / REPORT))
    except (OSError, ValueError):
        return None


def silent_s(log: Path) -> float | None:
    """Seconds since ``log`` last grew (None: it cannot be read)."""
    try:
        return max(0.0, time.time() - log.stat().st_mtime)
    except OSError:
        return None


def _ordered(root: int, pids: set[int]) -> list[tuple[int, int]]:
    """``pids`` with their depth below ``root`` (escapees that left the tree: depth 1),
    the root first, then by depth and pid."""
    parent = {pid: _ppid(pid) for pid in pids}

    def depth(pid: int) -> int:
        d, seen = 0, set()
        while pid != root and pid in parent and pid not in seen:
            seen.add(pid)
            pid = parent[pid]
            d += 1
        return d if pid == root else max(d, 1)

    return sorted(((p, depth(p)) for p in pids), key=lambda t: (t[1], t[0]))


def _ppid(pid: int) -> int:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(raw[raw.rfind(")") + 2 :].split()[1])


def _title(pid: int) -> tuple[str, str]:
    """(command line or title, executable path) of ``pid``."""
    exe = ""
    with contextlib.suppress(OSError):
        exe = os.readlink(f"/proc/{pid}/exe")
    title = comm = ""
    with contextlib.suppress(OSError):
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        title = " ".join(a.decode("utf-8", "replace") for a in raw.split(b"\0") if a)
    with contextlib.suppress(OSError):
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    if comm.startswith("VLLM::") and comm not in title:  # the title vLLM set, cut to 15
        title = f"{title} [{comm}]"
    return title[:300] or exe, exe


def _is_python(title: str, exe: str) -> bool:
    names = [Path(exe.removesuffix(" (deleted)")).name] if exe else []
    first = title.split(" ", 1)[0] if title else ""
    names.append(Path(first).name)
    return any(_PYTHON_EXE.match(n) for n in names if n) or "VLLM::" in title


def _dump_one(
    pid: int, depth: int, out: Path, py_spy: Path | None, per_s: float, deadline: float
) -> ProcessDump:
    title, exe = _title(pid)
    base = ProcessDump(pid=pid, title=title, depth=depth)
    if not _is_python(title, exe):
        return replace(base, note=f"not a Python process ({exe or 'executable unknown'})")
    if py_spy is None:
        return replace(base, note="py-spy not found")
    file = f"{HANG_DIR}/py-spy-{pid}.txt"
    threads: tuple[ThreadStack, ...] = ()
    note: str | None = None
    nonblocking = False
    for nonblocking in (False, True):
        left = deadline - time.monotonic()
        if left <= 0:
            note = "not dumped: the time for dumps ran out"
            break
        argv = [str(py_spy), "dump", "--json", "--full-filenames", "--pid", str(pid)]
        if nonblocking:
            argv.append("--nonblocking")
        try:
            done = proc.run(argv, capture=True, timeout=min(per_s, left), grace_s=1.0)
        except Exception as exc:
            note = f"py-spy could not run: {exc}"
            break
        if done.interrupted:  # the run is being stopped: no more dumps, end the tree
            raise KeyboardInterrupt
        if done.timed_out:
            note = f"py-spy dump did not return within {min(per_s, left):g} s"
            continue
        if done.rc == 0:
            try:
                threads = _threads(json.loads(done.stdout))
                note = None if threads else "py-spy found no Python threads"
            except (ValueError, TypeError, KeyError) as exc:
                note = f"py-spy's output could not be read: {exc}"
        else:
            note = _refusal(done.stderr or done.stdout)
        break
    result = replace(base, file=file, threads=threads, note=note, nonblocking=nonblocking)
    with contextlib.suppress(OSError):
        atomic.write_text(out / Path(file).name, render(result))
    return result


def _threads(data: Any) -> tuple[ThreadStack, ...]:
    found = []
    for t in data:
        frames = tuple(
            Frame(str(f.get("name", "?")), str(f.get("filename", "?")), int(f.get("line", 0)))
            for f in t.get("frames", ())
        )
        found.append(
            ThreadStack(
                name=str(t.get("thread_name") or t.get("thread_id")),
                thread_id=int(t.get("os_thread_id") or t.get("thread_id") or 0),
                active=bool(t.get("active")),
                gil=bool(t.get("owns_gil")),
                frames=frames,
            )
        )
    return tuple(found)


def _refusal(stderr: str) -> str:
    """py-spy's reason, in one line, and what to do about it."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    said = next((ln.removeprefix("Error: ") for ln in lines if ln.startswith("Error:")), "")
    cause = next((ln for ln in lines if re.match(r"\d+: ", ln)), "")
    text = f"{said} ({cause.split(': ', 1)[1]})" if cause else said or (lines[:1] or ["?"])[0]
    low = stderr.lower()
    if "permission denied" in low or "operation not permitted" in low:
        return (
            "py-spy may not attach (permission denied): run vllmdiag as root or give it "
            "CAP_SYS_PTRACE (in a container: --cap-add SYS_PTRACE)"
        )
    if "python version" in low or "python interpreter" in low:
        return f"not a Python process py-spy can read: {text}"
    return f"py-spy dump failed: {text}"


def _unique_notes(dumps: list[ProcessDump]) -> tuple[str, ...]:
    """Why no process could be dumped, when none was (each reason once)."""
    if any(d.dumped for d in dumps):
        return ()
    seen: dict[str, None] = {}
    for d in dumps:
        if d.note and not d.note.startswith("not a Python process ("):
            seen[d.note] = None
    return tuple(seen)


def is_stdlib(frame: Frame) -> bool:
    return frame.file.startswith("<frozen") or bool(_STDLIB.search(frame.file))


def stuck_at(dumps: list[ProcessDump]) -> StuckAt | None:
    """The thread a hang is read from: in vLLM's engine core if there is one, else in
    the deepest process with a running thread, else in the deepest dumped process; in
    it, the thread holding the GIL, else a running one, else the main thread."""
    dumped = [d for d in dumps if d.dumped]
    if not dumped:
        return None

    def running(d: ProcessDump) -> bool:
        return any(t.active or t.gil for t in d.threads)

    engine = [d for d in dumped if "EngineCor" in d.title]  # comm keeps 15 characters
    busy = [d for d in dumped if running(d)]
    pick = max(engine or busy or dumped, key=lambda d: (d.depth, d.pid))
    thread = (
        next((t for t in pick.threads if t.gil), None)
        or next((t for t in pick.threads if t.active and t.frames), None)
        or next((t for t in pick.threads if t.name == "MainThread"), None)
        or pick.threads[0]
    )
    ours = tuple(f for f in thread.frames if not is_stdlib(f))[:TOP_FRAMES]
    return StuckAt(
        pick.pid,
        pick.title,
        thread.name,
        ours,
        thread.frames[0] if thread.frames else None,
    )


def render(d: ProcessDump) -> str:
    """A process's dump as text (py-spy's own layout, full file names)."""
    mode = " (sampled without pausing it: stacks may be torn)" if d.nonblocking else ""
    lines = [f"Process {d.pid}: {d.title}{mode}"]
    if d.note:
        lines.append(f"no stack: {d.note}")
    for t in d.threads:
        state = ", ".join(s for s, on in (("active", t.active), ("gil", t.gil)) if on) or "idle"
        lines += ["", f'Thread {t.thread_id} ({state}): "{t.name}"']
        lines += [f"    {f}" for f in t.frames]
    return "\n".join(lines) + "\n"
