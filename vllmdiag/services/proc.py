"""The only module that starts subprocesses.

Every child runs in its own session (so its own process group). Its output goes straight
to a file, never through a pipe we could fail to drain, so a log is complete even when
vllmdiag itself is killed. On timeout or Ctrl-C the whole tree gets SIGTERM, then
SIGKILL after a grace period: profilers need the TERM to flush their traces, and a
child that ignores it must still not outlive the cell. Descendants that left the group
(``setsid``) are tracked by walking ``/proc`` while the child runs.

When a cell's child ends, :func:`sweep` ends what it started that still runs, and
``Completed.swept`` says which: its process group, its session, every process carrying its
cell tag, and orphans: this process makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``)
when it first runs a cell, so a daemon a cell double-forks is reparented here, not to init,
and is known by its parent (this process) and its start time (within the cell's run). An
untagged orphan (started under ``env -i``) that started while another cell also ran cannot
be told apart: it is left to the end of the last cell that could own it. Limits: a daemon
that outlives vllmdiag itself (killed with SIGKILL) is found later only by its tag; one with
neither tag nor a parent here (``env -i`` after vllmdiag died) is not found; no cgroup is used
(none is writable on the machines this runs on).

Off the main thread, where Ctrl-C never arrives, a child is stopped the same way when its
cancel event is set: passed to :func:`run`, or set for every child a thread starts with
:func:`cancel_scope` (so an executor that knows nothing of threads is stopped too).
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from vllmdiag.errors import ProcessError

DEFAULT_GRACE_S = 10.0

#: Set in every cell's environment (``<run id>:<cell id>``) and inherited by everything the
#: cell starts, ``setsid`` escapees and reparented orphans included, so that a later
#: vllmdiag can find what an earlier one, killed with SIGKILL, left running.
TAG_VAR = "VLLMDIAG_CELL_TAG"

#: Signals handled like Ctrl-C while a job runs (``timeout``, batch schedulers, systemd
#: and a closed terminal send these): the cell's tree is ended and the run journaled.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_CLEANUP_BLOCK = {signal.SIGINT, *STOP_SIGNALS}


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, or a SIGTERM / SIGHUP handled like it; ``signame`` says which."""

    def __init__(self, signame: str = "SIGINT") -> None:
        super().__init__(signame)
        self.signame = signame

    @property
    def exit_code(self) -> int:
        """The shell's convention: 128 + the signal's number."""
        return 128 + int(getattr(signal, self.signame, signal.SIGINT))


@dataclass
class StopState:
    """Which signal stopped the job, once one has (``None`` until then)."""

    signame: str | None = None


@contextlib.contextmanager
def stop_signals() -> Iterator[StopState]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Interrupted` in the main
    thread exactly as Ctrl-C raises ``KeyboardInterrupt``; a second such signal while the
    first is being handled is ignored, so the cleanup it started can finish. Outside the
    main thread (where handlers cannot be set) this does nothing."""
    state = StopState()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def handler(signum: int, _frame: object) -> None:
        if state.signame is not None:
            return
        state.signame = signal.Signals(signum).name
        raise Interrupted(state.signame)

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield state
    except KeyboardInterrupt:
        if state.signame is None:
            state.signame = "SIGINT"
        raise
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


#: Variables a child never inherits unless the caller sets them explicitly: they change
#: what vLLM, Python or uv do behind the recipe's back.
CLEARED_PREFIXES = ("VLLM_", "UV_", "PIP_", "CONDA_", "TORCH_", "CUDA_LAUNCH", "NCCL_DEBUG")
CLEARED_NAMES = frozenset(
    {
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONNOUSERSITE",
        "PYTHONSAFEPATH",
        "VIRTUAL_ENV",
        "OMP_NUM_THREADS",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "LD_PRELOAD",
        "__PYVENV_LAUNCHER__",
    }
)


@dataclass(frozen=True)
class Completed:
    """What a finished (or stopped) child did."""

    argv: tuple[str, ...]
    rc: int | None
    elapsed_s: float
    timed_out: bool = False
    interrupted: bool = False
    stdout: str = ""
    stderr: str = ""
    #: Processes the child started that still ran when it ended, ended then (cells only).
    swept: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out and not self.interrupted


Tick = Callable[[float], None]
#: Called at a timeout, before the tree is ended, with the child's pid and every live
#: process of its tree (to dump their stacks: what the kill would lose).
OnTimeout = Callable[[int, set[int]], None]

_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "vllmdiag_cancel", default=None
)


@contextlib.contextmanager
def cancel_scope(event: threading.Event) -> Iterator[threading.Event]:
    """While the block runs, every child :func:`run` starts in this thread (and context) is
    stopped as on Ctrl-C once ``event`` is set: its tree gets TERM, then KILL after the
    grace period, and ``interrupted`` is set. A child not yet started is never started."""
    token = _CANCEL.set(event)
    try:
        yield event
    finally:
        _CANCEL.reset(token)


def cancel_requested() -> bool:
    """True once the cancel event :func:`cancel_scope` set here has been set (for waits
    that are not a child of :func:`run`: a remote call, a poll)."""
    event = _CANCEL.get()
    return event is not None and event.is_set()


def clean_environ(
    base: Mapping[str, str] | None = None,
    *,
    keep: Iterable[str] = (),
) -> dict[str, str]:
    """``base`` (default: ours) less the variables that leak one run into another."""
    src = dict(os.environ if base is None else base)
    keep_set = set(keep)
    return {
        k: v
        for k, v in src.items()
        if k in keep_set or not (k in CLEARED_NAMES or k.startswith(CLEARED_PREFIXES))
    }


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float | None = None,
    log: Path | None = None,
    capture: bool = False,
    grace_s: float = DEFAULT_GRACE_S,
    on_tick: Tick | None = None,
    tick_s: float = 0.25,
    on_spawn: Callable[[int], None] | None = None,
    cancel: threading.Event | None = None,
    on_timeout: OnTimeout | None = None,
) -> Completed:
    """Run ``argv`` to completion in its own process group.

    ``log``: stdout and stderr together, appended in full. ``capture``: return them as
    text instead (for short helper commands). A missing program raises
    :class:`ProcessError`; a non-zero exit does not (look at ``rc``), and neither does
    Ctrl-C: the tree is stopped and ``interrupted`` is set, for the caller to journal
    before it stops. ``on_spawn`` gets the child's pid (also its process group and
    session id) as soon as it exists, for the caller to journal. ``cancel`` (default: the
    one :func:`cancel_scope` set) stops the tree from another thread as Ctrl-C would.
    ``on_timeout``: see :data:`OnTimeout`; the tree is ended after it whatever it does.
    """
    args = tuple(str(a) for a in argv)
    if cancel is None:
        cancel = _CANCEL.get()
    if cancel is not None and cancel.is_set():
        return Completed(args, None, 0.0, interrupted=True)
    out: IO[bytes]
    err: IO[bytes]
    with contextlib.ExitStack() as stack:
        if capture:
            out = stack.enter_context(tempfile.TemporaryFile())
            err = stack.enter_context(tempfile.TemporaryFile())
        elif log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            out = stack.enter_context(open(log, "ab"))
            err = out
        else:
            out = err = stack.enter_context(open(os.devnull, "wb"))
        start = time.monotonic()
        tag = (env or {}).get(TAG_VAR)
        if tag is not None:
            _become_subreaper()
        since = _now_ticks()
        try:
            child = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise ProcessError(
                f"cannot start {args[0]!r}: {exc.strerror or exc}",
                hint="check that the program exists and is executable",
            ) from exc
        # the child's own start time, in the clock its descendants' start times use (a
        # container's /proc/uptime may count from another boot); uptime if it is gone
        since = start_ticks(child.pid) or since
        _RUNNING[child.pid] = (since, tag)
        if on_spawn is not None:
            try:
                on_spawn(child.pid)
            except BaseException:
                kill_tree(child, child.pid, set(), grace_s)
                _RUNNING.pop(child.pid, None)
                raise
        rc, timed_out, interrupted = _wait(
            child, start, timeout, grace_s, on_tick, tick_s, cancel, on_timeout
        )
        elapsed = time.monotonic() - start
        stdout = stderr = ""
        if capture:
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            stderr = err.read().decode("utf-8", "replace")
    swept = sweep(child.pid, since, tag, grace_s)
    return Completed(args, rc, elapsed, timed_out, interrupted, stdout, stderr, tuple(swept))


def check_output(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float | None = 600.0,
    what: str | None = None,
) -> str:
    """Run a helper command and return its stdout; a failure raises with its stderr."""
    done = run(argv, env=env, cwd=cwd, timeout=timeout, capture=True)
    if done.interrupted:
        raise KeyboardInterrupt
    if not done.ok:
        label = what or " ".join(done.argv[:3])
        reason = "timed out" if done.timed_out else f"exited {done.rc}"
        detail = (done.stderr.strip() or done.stdout.strip())[-2000:]
        raise ProcessError(f"{label} {reason}:\n{detail}" if detail else f"{label} {reason}")
    return done.stdout


def _wait(
    child: subprocess.Popen[bytes],
    start: float,
    timeout: float | None,
    grace_s: float,
    on_tick: Tick | None,
    tick_s: float,
    cancel: threading.Event | None = None,
    on_timeout: OnTimeout | None = None,
) -> tuple[int | None, bool, bool]:
    tracked: set[int] = set()
    pgid = child.pid  # start_new_session: the child leads its own group
    last_scan = 0.0
    try:
        while True:
            try:
                rc = child.wait(timeout=tick_s)
                break
            except subprocess.TimeoutExpired:
                pass
            if cancel is not None and cancel.is_set():
                kill_tree(child, pgid, tracked, grace_s)
                return child.returncode, False, True
            now = time.monotonic()
            if now - last_scan >= 1.0:
                tracked |= descendants(child.pid)
                last_scan = now
            if on_tick is not None:
                on_tick(now - start)
            if timeout is not None and now - start > timeout:
                if on_timeout is not None:
                    tree = group_members(pgid) | descendants(child.pid) | tracked | {child.pid}
                    try:
                        on_timeout(child.pid, _alive(tree))
                    finally:
                        kill_tree(child, pgid, tracked, grace_s)
                    return child.returncode, True, False
                kill_tree(child, pgid, tracked, grace_s)
                return child.returncode, True, False
    except KeyboardInterrupt:
        with _signals_held():
            kill_tree(child, pgid, tracked, grace_s)
        return child.returncode, False, True
    # The child is gone; anything it left behind in its group or below it goes too
    # (ended by :func:`sweep`, which says which).
    _LEFT_AT_EXIT[child.pid] = _alive(group_members(pgid) | tracked)
    return rc, False, False


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C, TERM and HUP while a tree is being ended, and drop those that came
    meanwhile: the job is already stopping, and a second signal must not cut the cleanup
    short and leave the engine running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, _CLEANUP_BLOCK)
    try:
        yield
    finally:
        while signal.sigtimedwait(_CLEANUP_BLOCK, 0) is not None:
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _CLEANUP_BLOCK)


def kill_tree(child: subprocess.Popen[bytes], pgid: int, tracked: set[int], grace_s: float) -> None:
    """TERM the child's group and every descendant seen, then KILL what is left."""
    pids = group_members(pgid) | descendants(child.pid) | tracked | {child.pid}
    _terminate(pids, grace_s, child=child)


def _terminate(
    pids: set[int], grace_s: float, child: subprocess.Popen[bytes] | None = None
) -> None:
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if child is not None:
            child.poll()
        if not _alive(pids):
            break
        time.sleep(0.05)
    for pid in _alive(pids):
        _signal(pid, signal.SIGKILL)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5)
    deadline = time.monotonic() + 5
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.02)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) of a process from /proc, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def _all_stats() -> dict[int, tuple[str, int, int]]:
    out: dict[int, tuple[str, int, int]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                st = _stat(int(entry.name))
                if st is not None:
                    out[int(entry.name)] = st
    return out


def _alive(pids: Iterable[int]) -> set[int]:
    """Those of ``pids`` still running (zombies count as gone)."""
    live = set()
    for pid in pids:
        st = _stat(pid)
        if st is not None and st[0] not in ("Z", "X"):
            live.add(pid)
    return live


def is_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    return bool(_alive([pid]))


def group_members(pgid: int) -> set[int]:
    return {pid for pid, (state, _, g) in _all_stats().items() if g == pgid and state != "Z"}


def descendants(root: int) -> set[int]:
    """Every live process below ``root`` (children, grandchildren, ...)."""
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in _all_stats().items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        for kid in children.get(stack.pop(), []):
            if kid not in found:
                found.add(kid)
                stack.append(kid)
    return found


def end(pids: Iterable[int], grace_s: float = DEFAULT_GRACE_S) -> set[int]:
    """TERM ``pids``, then KILL what outlives ``grace_s``; returns those that were alive."""
    live = _alive(pids)
    if live:
        _terminate(live, grace_s)
    return live


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (tells a reused pid apart)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(raw[raw.rfind(")") + 2 :].split()[19])


def session_members(sid: int, since_ticks: int = 0) -> set[int]:
    """Live processes of session ``sid`` that started at or after ``since_ticks``."""
    out = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            try:
                raw = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rfind(")") + 2 :].split()
            if fields[0] in ("Z", "X") or int(fields[3]) != sid:
                continue
            if int(fields[19]) >= since_ticks:
                out.add(pid)
    return out


def tagged(prefix: str) -> dict[int, str]:
    """Live processes whose environment carries ``TAG_VAR=<prefix>...``, with the tag."""
    needle = f"{TAG_VAR}={prefix}".encode()
    found: dict[int, str] = {}
    me = os.getpid()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                environ = Path(f"/proc/{entry.name}/environ").read_bytes()
            except OSError:
                continue
            for item in environ.split(b"\0"):
                if item.startswith(needle):
                    found[int(entry.name)] = item.split(b"=", 1)[1].decode("utf-8", "replace")
                    break
    return {pid: tag for pid, tag in found.items() if _alive([pid])}


#: Children :func:`run` started and has not swept yet: pid -> (start ticks, cell tag).
_RUNNING: dict[int, tuple[int, str | None]] = {}
#: What a child's group and tracked descendants held when it exited, for :func:`sweep`.
_LEFT_AT_EXIT: dict[int, set[int]] = {}
_PR_SET_CHILD_SUBREAPER = 36
_subreaper: list[bool] = []


def _become_subreaper() -> None:
    """Make this process the child subreaper of its descendants (Linux; once)."""
    if _subreaper:
        return
    ok = False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    _subreaper.append(ok)


def _now_ticks() -> int:
    """Now, in clock ticks since boot (the unit of a process's start time)."""
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, int(uptime * os.sysconf("SC_CLK_TCK")) - 1)


def _environ_tag(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    needle = f"{TAG_VAR}=".encode()
    for item in raw.split(b"\0"):
        if item.startswith(needle):
            return item[len(needle) :].decode("utf-8", "replace")
    return None


def _orphans(child: int, since: int, tag: str) -> set[int]:
    """Processes reparented to this process (its subreaper) that the cell started: its tag,
    or no tag and no other running cell that could have started them."""
    me = os.getpid()
    found: set[int] = set()
    for pid, (state, ppid, _) in _all_stats().items():
        if ppid != me or pid in _RUNNING or state in ("Z", "X"):
            continue
        began = start_ticks(pid)
        if began is None or began < since:
            continue
        theirs = _environ_tag(pid)
        if theirs == tag:
            found.add(pid)
        elif theirs is None:
            rivals = [s for p, (s, t) in list(_RUNNING.items()) if p != child and s <= began]
            if not rivals:
                found.add(pid)
    return found


def sweep(child: int, since: int, tag: str | None, grace_s: float) -> list[int]:
    """End what the child ``child`` (started at ``since`` ticks) left running once it has
    ended: its group, its session, and for a cell (``tag``) every process with its tag and
    its orphans (see the module's docstring), their descendants too; returns them, sorted."""
    _RUNNING.pop(child, None)
    found = _LEFT_AT_EXIT.pop(child, set()) | group_members(child)
    found |= session_members(child, since)
    if tag is not None:
        found |= {pid for pid, t in tagged(tag).items() if t == tag}
        found |= _orphans(child, since, tag)
    for pid in list(found):
        found |= descendants(pid)
    found.discard(os.getpid())
    live = _alive(found)
    if live:
        _terminate(live, grace_s)
    for pid in live:  # orphans reparented here are ours to reap
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
    return sorted(live)
