"""Reading a configuration file a user named: a regular file, of bounded size, in UTF-8.

``/dev/zero`` would be read until memory runs out and a FIFO would block forever, so
anything that is not a regular file is refused before a byte is read; a file larger
than :data:`MAX_BYTES` is refused rather than parsed; bytes that are not UTF-8 are
reported at their ``file:line:col``.
"""

from __future__ import annotations

import difflib
import errno
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


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words (``a FIFO (named pipe)``)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def probe(path: Path, *, what: str = "file") -> os.stat_result | None:
    """``path``'s stat, or None where nothing is there; a path the system refuses to look
    up (a name over 255 bytes, a path over 4,096, no permission) is a
    :class:`ConfigError` naming it, never an ``OSError``."""
    try:
        return path.stat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            longest = max((len(os.fsencode(p)) for p in path.parts), default=0)
            raise ConfigError(
                f"the path of the {what} is too long for this system"
                + (f" (a name in it is {longest} bytes; at most 255)" if longest > 255 else ""),
                where=str(path)[:300] + ("..." if len(str(path)) > 300 else ""),
                hint="check the path (a pasted line, or a variable expanded twice?)",
            ) from None
        raise ConfigError(
            f"cannot look at the {what}: {exc.strerror or exc}",
            where=str(path),
            hint=f"check the path and its permissions, or give another {what}",
        ) from None


def regular_file(path: Path, *, what: str, suffixes: tuple[str, ...] = ()) -> Path:
    """``path`` if it is a regular file; else a :class:`ConfigError` that says what is
    there instead (nothing, with a close name if one is beside it; a directory; a device
    or a FIFO, which would be read forever or block)."""
    st = probe(path, what=what)
    if st is None:
        raise ConfigError(
            f"no such {what}",
            where=str(path),
            hint=did_you_mean(path, suffixes=suffixes) or f"give the path of a {what}",
        )
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(
            f"this is {kind_of(st.st_mode)}, not a {what}",
            where=str(path),
            hint=f"give the path of a {what} saved to disk",
        )
    return path


def did_you_mean(path: Path, *, suffixes: tuple[str, ...] = (".yaml", ".yml")) -> str | None:
    """``did you mean 'recipes/thrmma-cpu.yaml'?`` for a missing path whose directory holds
    a file of a close name (bounded: the first 1,000 entries)."""
    parent = path.parent
    try:
        names = []
        with os.scandir(parent) as it:
            for i, entry in enumerate(it):
                if i >= 1000:
                    break
                if not suffixes or entry.name.endswith(suffixes) or entry.is_dir():
                    names.append(entry.name)
    except OSError:
        return None
    close = difflib.get_close_matches(path.name, names, n=1, cutoff=0.6)
    return f"did you mean {str(parent / close[0])!r}?" if close else None


def read_text(file: Path, *, what: str = "file", limit: int = MAX_BYTES) -> str:
    """The file's text; :class:`ConfigError` naming the file for anything else."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            probe(file, what=what)
        raise ConfigError(
            f"cannot read the {what}: {exc.strerror}",
            where=str(file),
            hint=f"give the path of a readable {what}",
        ) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = kind_of(mode)
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
