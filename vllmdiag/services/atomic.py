"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any


def write_text(path: Path, text: str) -> None:
    """``path`` holds ``text``, or it is left as it was. A device, a FIFO or a socket at
    ``path`` is never replaced by a file (as root, ``--out /dev/full`` would otherwise
    replace the device): ``OSError``."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        kind = "a directory" if stat.S_ISDIR(mode) else "a device, a FIFO or a socket"
        raise OSError(errno.EEXIST, f"{kind} is there, not a file to replace", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # a lone surrogate (a kernel name decoded with surrogateescape) is written as
        # its escape, never a UnicodeEncodeError that loses the file
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are for everyone who reads runs
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def append_jsonl(path: Path, record: Any) -> None:
    """One JSON line appended and flushed to disk before returning: a journal entry that
    was written survives a crash right after it (a torn last line is the reader's to skip)."""
    line = json.dumps(record, default=str) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


#: Results, markers and stored probes are kilobytes; a file far larger is not one of them.
MAX_JSON_BYTES = 64 * 1024 * 1024


def read_json(path: Path, *, max_bytes: int = MAX_JSON_BYTES, follow: bool = True) -> Any:
    """A JSON file vllmdiag wrote. Something else in its place (a FIFO, a device, a
    file far too large, bytes that are not UTF-8 or not JSON) raises ``ValueError``;
    a missing or unreadable file raises ``OSError`` (a symlink too, with ``follow``
    false)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if st.st_size > max_bytes:
            raise ValueError(f"{path} is larger than {max_bytes} bytes")
        raw = fh.read(max_bytes + 1)
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{path} nests deeper than JSON this tool reads") from None
