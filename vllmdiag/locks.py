"""Advisory file locks: one env build at a time per env, one matrix at a time per node."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from vllmdiag.errors import VllmdiagError


@contextmanager
def file_lock(path: Path, *, wait: bool = True, what: str = "lock") -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` for the block.

    With ``wait=False`` a held lock raises at once, naming the holder's pid.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise VllmdiagError(
                f"{what} is held by another vllmdiag process (pid {holder})",
                where=str(path),
                hint="wait for it to finish: two runs on one node would measure each other",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)
