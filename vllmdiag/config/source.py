"""Reading a configuration file a user named: a regular file, of bounded size, in UTF-8.

``/dev/zero`` would be read until memory runs out and a FIFO would block forever, so
anything that is not a regular file is refused before a byte is read; a file larger
than :data:`MAX_BYTES` is refused rather than parsed; bytes that are not UTF-8 are
reported at their ``file:line:col``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from vllmdiag.errors import ConfigError

#: Far above any recipe, arm file or catalogue (they are kilobytes), far below trouble.
MAX_BYTES = 16 * 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_text(file: Path, *, what: str = "file", limit: int = MAX_BYTES) -> str:
    """The file's text; :class:`ConfigError` naming the file for anything else."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(
            f"cannot read the {what}: {exc.strerror}",
            where=str(file),
            hint=f"give the path of a readable {what}",
        ) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise ConfigError(
                f"the {what} is {kind}, not a regular file",
                where=str(file),
                hint=f"give the path of a {what}: a regular file of text",
            )
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ConfigError(f"cannot read the {what}: {exc.strerror}", where=str(file)) from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if len(raw) > limit:
        raise ConfigError(
            f"the {what} is larger than {limit // (1024 * 1024)} MiB",
            where=str(file),
            hint=f"a {what} is a few kilobytes of text: is this the right file?",
        )
    return decode(raw, file, what=what)


def decode(raw: bytes, file: Path, *, what: str = "file") -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = raw[exc.start : exc.start + 1].hex()
        raise ConfigError(
            f"the {what} is not UTF-8 text (byte 0x{bad} cannot be decoded)",
            where=f"{file}:{line}:{col}",
            hint="save it as UTF-8 (e.g. iconv -f latin1 -t utf-8), or check it is the right file",
        ) from None
