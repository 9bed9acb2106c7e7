"""The run's secret digests (``secrets.sha256``): kept by the writer, learnt by whatever
reads the run back, so that a value the run knew to be secret is masked in everything
shown of it (logs echo their argv and environment)."""

from __future__ import annotations

from pathlib import Path

from vllmdiag.services import atomic, redact
from vllmdiag.spine.rundir.layout import SECRET_DIGESTS

_MAX_LINES = 10_000


def _lines(folder: Path) -> list[str] | None:
    try:
        return (folder / SECRET_DIGESTS).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None


def learn(root: Path) -> None:
    """Mask what the run at ``root`` knew to be secret."""
    lines = _lines(root)
    if lines is not None:
        redact.learn_digests(lines[:_MAX_LINES])


def learn_near(path: Path, depth: int = 4) -> None:
    """Mask what the run holding ``path`` (a cell's log, a run directory) knew to be
    secret: the nearest folder at or above it, ``depth`` levels up at most, that keeps
    :data:`~vllmdiag.spine.rundir.layout.SECRET_DIGESTS`."""
    here = path if path.is_dir() else path.parent
    for folder in [here, *here.parents][: depth + 1]:
        lines = _lines(folder)
        if lines is not None:
            redact.learn_digests(lines[:_MAX_LINES])
            return


def keep(root: Path) -> bool:
    """Write (merged with those of earlier starts) the digests of every value this
    process knows to be secret; False when nothing changed. Raises ``OSError``."""
    earlier = _lines(root) or []
    salt = redact.salt_of(earlier) or redact.new_salt()
    lines = sorted({*earlier, *redact.digests(salt)})
    if lines == sorted(earlier):
        return False
    atomic.write_text(root / SECRET_DIGESTS, "\n".join(lines) + "\n")
    return True
