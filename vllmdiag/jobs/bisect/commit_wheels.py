"""The wheel of one commit: its per-commit index (the ``--wheels`` template rendered for
the commit and variant, or the commit's default variant when the variant has no
subdirectory there), and the wheel on it an installer would pick for the leg's Python
and this platform.

The step installs that wheel by its URL (``PKG @ URL``), not by name from the index: the
per-commit indexes carry no upload times, and uv drops a file without one as soon as
``--exclude-newer`` is set (which a step needs for the rest of its resolve), whatever the
date, a per-package one included; ``--exclude-newer-package PKG=false`` lifts it only in
recent uv (uv 0.5, the least this project takes, has no ``--exclude-newer-package``). A
direct URL is outside the cutoff in both (checked with uv 0.5.0 and 0.13.9).

On a machine with no index, a ``file://`` entry may instead be a prebuilt environment (a
venv, or a link to one) with that commit's package in it: the step then runs the check
in it as it is (an ``existing`` leg), as a recipe's ``path:`` leg does.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from vllmdiag.jobs.bisect.wheel_template import fallback, render
from vllmdiag.services import redact
from vllmdiag.services.pkgindex import html_index
from vllmdiag.services.pkgindex.simple_api import IndexFile
from vllmdiag.services.pkgindex.wheels import pick_wheel


@dataclass(frozen=True)
class CommitWheel:
    """``file`` is None when the commit has no wheel that installs here; ``said`` says
    which index was read and why there is none."""

    commit: str
    index: str
    file: IndexFile | None
    said: str
    env: Path | None = None  # a prebuilt environment for this commit, used as it is


def _versions(files: tuple[IndexFile, ...]) -> list[Version]:
    found: set[Version] = set()
    for f in files:
        if f.is_wheel:
            try:
                found.add(parse_wheel_filename(f.filename)[1])
            except (InvalidWheelFilename, InvalidVersion):
                continue
    return sorted(found, reverse=True)


def commit_wheel(
    template: str, commit: str, variant: str | None, name: str, python: str
) -> CommitWheel:
    """The wheel of ``name`` at ``commit`` for ``python`` (X.Y) on this platform."""
    index = render(template, commit, variant)
    env = prebuilt_env(index)
    if env is not None:
        return CommitWheel(commit, index, None, f"the prebuilt environment {env}", env)
    files = html_index.project_files(index, name)
    notes = []
    if files is None:
        root = fallback(template, commit) if variant else None
        if root is not None:
            notes.append(f"no {variant} index: tried the commit's default variant")
            index = root
            files = html_index.project_files(index, name)
    shown = redact.url(index)
    if files is None:
        return CommitWheel(commit, index, None, "; ".join([*notes, f"no index at {shown}"]))
    for version in _versions(files):
        wheel = pick_wheel(files, version, python)
        if wheel is not None:
            return CommitWheel(commit, index, wheel, "; ".join([*notes, wheel.filename]))
    listed = sum(1 for f in files if f.is_wheel)
    why = f"{listed} wheel(s) at {shown}, none for Python {python} on this platform"
    return CommitWheel(commit, index, None, "; ".join([*notes, why]))


def prebuilt_env(index: str) -> Path | None:
    """The environment a ``file://`` entry is (a directory with ``pyvenv.cfg`` or
    ``bin/python``), else None."""
    parts = urllib.parse.urlsplit(index)
    if parts.scheme != "file":
        return None
    path = Path(urllib.request.url2pathname(parts.path))
    if (path / "pyvenv.cfg").is_file() or (path / "bin" / "python").exists():
        return path.resolve()
    return None
