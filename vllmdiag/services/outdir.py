"""An output directory a user names (``--out``, ``--runs-root``): made if it is not
there, and every way that fails (a file or a device in its place, ``/proc``, a
read-only file system, no permission, a full disk) a :class:`RunDirError` naming the
path, never an ``OSError``."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from vllmdiag.errors import RunDirError


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "an existing file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "not a directory"


def ensure_dir(path: Path, *, flag: str = "--out") -> Path:
    """``path`` as a directory, made (with its parents) if missing."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise RunDirError(
            f"cannot use this output directory: {exc.strerror}", where=str(path),
            hint=f"give {flag} a directory you can write",
        ) from None  # fmt: skip
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise RunDirError(
            f"the output directory is {_kind(st.st_mode)}",
            where=str(path),
            hint=f"give {flag} a directory path, new or existing",
        )
    with writes(path, "make the output directory", flag=flag):
        path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def writes(path: Path, what: str, *, flag: str = "--out") -> Iterator[None]:
    """Turn an ``OSError`` in the block into a :class:`RunDirError` about ``path``."""
    try:
        yield
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else str(path)
        raise RunDirError(
            f"cannot {what}: {exc.strerror or exc}",
            where=where,
            hint=f"give {flag} a directory you can write (a read-only place, /proc or a "
            "full disk cannot hold it)",
        ) from None
