"""Which versions of a package are candidates: not yanked, installable on the Python in
question, inside the user's range, uploaded before ``--exclude-newer``; and the releases
near a missing one, for a hint. Pure."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from vllmdiag.errors import VllmdiagError
from vllmdiag.services.pkgindex.simple_api import IndexFile


@dataclass(frozen=True)
class Candidate:
    version: Version
    uploaded: str | None  # earliest upload time of its usable files (ISO)


def file_version(file: IndexFile) -> Version | None:
    try:
        if file.is_wheel:
            return parse_wheel_filename(file.filename)[1]
        return parse_sdist_filename(file.filename)[1]
    except (InvalidWheelFilename, InvalidVersion, ValueError):
        return None


def parse_specifier(text: str | None, *, what: str = "--versions") -> SpecifierSet:
    try:
        return SpecifierSet(text or "")
    except InvalidSpecifier:
        raise VllmdiagError(
            f"not a version specifier: {text!r}",
            where=what,
            hint="write it as pip would, e.g. '>=4.0,<5'",
        ) from None


def parse_date(text: str) -> datetime:
    """An ``--exclude-newer`` value: a date (``2026-06-01``) or an RFC 3339 time."""
    raw = text.strip().replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise VllmdiagError(
            f"not a date: {text!r}", where="--exclude-newer", hint="write e.g. 2026-06-01"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def candidates(
    files: Iterable[IndexFile],
    *,
    python: str,
    spec: SpecifierSet | None = None,
    pre: bool = False,
    exclude_newer: datetime | None = None,
    always: Iterable[Version] = (),
) -> list[Candidate]:
    """Sorted candidate versions. A version counts when one of its files is not yanked,
    admits ``python`` (X.Y) by Requires-Python and was uploaded before ``exclude_newer``.
    Pre-releases only with ``pre`` (or when named in ``always``)."""
    py = Version(python)
    keep = set(always)
    first_upload: dict[Version, str | None] = {}
    for file in files:
        ver = file_version(file)
        if ver is None or file.yanked:
            continue
        if file.requires_python and not _admits(file.requires_python, py):
            continue
        up = file.upload_time
        if exclude_newer is not None and up is not None and _when(up) > exclude_newer:
            continue
        if ver not in keep:
            if ver.is_prerelease and not pre:
                continue
            if spec is not None and not spec.contains(ver, prereleases=True):
                continue
        prev = first_upload.get(ver)
        up = file.upload_time
        first_upload[ver] = min(prev, up) if (prev and up) else (prev or up)
    return [Candidate(v, first_upload[v]) for v in sorted(first_upload)]


def _admits(requires_python: str, py: Version) -> bool:
    try:
        return SpecifierSet(requires_python).contains(py, prereleases=True)
    except InvalidSpecifier:
        return True  # a malformed Requires-Python is the installer's business


def _when(text: str) -> datetime:
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def nearby(files: Sequence[IndexFile], wanted: Version, count: int = 3) -> str:
    """The releases closest to ``wanted`` (for a hint), oldest first."""
    found = sorted({v for f in files if not f.yanked and (v := file_version(f)) is not None})
    if not found:
        return "none"
    pos = bisect.bisect_left(found, wanted)
    pick = found[max(0, pos - count) : pos + count]
    return ", ".join(str(v) for v in pick)
