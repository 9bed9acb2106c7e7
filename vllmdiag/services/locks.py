"""Advisory file locks: one env build at a time per env, one matrix at a time per node."""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from vllmdiag.errors import VllmdiagError


@contextmanager
def file_lock(
    path: Path,
    *,
    wait: bool = True,
    what: str = "lock",
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` for the block.

    With ``wait=False`` a held lock raises at once, naming the holder's pid; with
    ``wait=True`` ``on_wait(holder_pid)`` is called once before blocking. The lock file
    is shared by every user of the machine (mode 0666), so two users exclude each other.
    """
    fd = _open(path, what)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            if not wait:
                raise VllmdiagError(
                    f"{what} is held by another vllmdiag process (pid {holder})",
                    where=str(path),
                    hint="wait for it to finish ('vllmdiag matrix --wait' queues behind it): "
                    "two runs on one node would measure each other",
                ) from None
            if on_wait is not None:
                on_wait(holder)
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass  # opened read-only (another user's file): the lock holds all the same
        yield
    finally:
        os.close(fd)


def _open(path: Path, what: str) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            except FileExistsError:  # another process created it just now
                return os.open(path, os.O_RDWR | os.O_CLOEXEC)
            os.fchmod(fd, 0o666)  # not narrowed by the umask: other users lock it too
            return fd
        except PermissionError:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.EISDIR, errno.ENOTDIR):
            problem = "is not a file"
        else:
            problem = f"cannot be opened: {exc.strerror}"
        raise VllmdiagError(
            f"the lock file for {what} {problem}",
            where=str(path),
            hint="remove what is in its way, or make its directory writable",
        ) from None


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
    except OSError:
        return "unknown"


def holder_if_held(path: Path) -> str | None:
    """The pid written in a held lock file (``"unknown"`` if none), or None when nothing
    holds it (or it does not exist); the lock is not taken."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(fd)
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
