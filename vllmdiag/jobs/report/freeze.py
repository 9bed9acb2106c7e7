"""A leg's ``uv pip freeze``, read as pins: name → version, and as the requirement lines
a reproduction installs (a wheel installed from a local file becomes the same version
from the index: a maintainer has no such file)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)

_PINNED = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(?P<version>\S+)$")
# A pin an older vllmdiag masked as a secret when it recorded the run (``tiktoken=***``).
_MASKED = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)=\*\*\*$")
_DIRECT = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*@\s*(?P<url>\S+)$")


@dataclass(frozen=True)
class Pins:
    """``versions``: canonical name → version; ``lines``: what to install, in order;
    ``localized``: how many local-file wheels became index pins; ``kept``: lines kept
    as they were (a VCS or remote URL, an editable install); ``lost``: distributions
    whose version the record lost (installed unpinned)."""

    versions: dict[str, str]
    lines: tuple[str, ...]
    localized: int = 0
    kept: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()


def read(freeze: Iterable[str]) -> Pins:
    versions: dict[str, str] = {}
    lines: list[str] = []
    kept: list[str] = []
    lost: list[str] = []
    localized = 0
    for raw in freeze:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pinned = _PINNED.match(line)
        if pinned:
            versions[canonicalize_name(pinned["name"])] = pinned["version"]
            lines.append(line)
            continue
        masked = _MASKED.match(line)
        if masked:
            lost.append(masked["name"])
            lines.append(masked["name"])
            continue
        direct = _DIRECT.match(line)
        wheel = _local_wheel(direct["url"]) if direct else None
        if direct and wheel:
            versions[canonicalize_name(direct["name"])] = wheel
            lines.append(f"{direct['name']}=={wheel}")
            localized += 1
            continue
        kept.append(line)
        lines.append(line)
    return Pins(versions, tuple(lines), localized, tuple(kept), tuple(lost))


def _local_wheel(url: str) -> str | None:
    """The version of a ``file://`` wheel, from its file name."""
    parts = urlsplit(url)
    if parts.scheme != "file" or not parts.path.endswith(".whl"):
        return None
    try:
        _name, version, _build, _tags = parse_wheel_filename(unquote(parts.path.rsplit("/")[-1]))
    except InvalidWheelFilename:
        return None
    return str(version)


def distribution(import_name: str, versions: dict[str, str], prefer: Iterable[str] = ()) -> str:
    """The installed distribution an import name most likely belongs to (``cutlass`` →
    ``nvidia-cutlass-dsl``, ``torch`` → ``torch``); the import name itself when none
    matches. ``prefer``: distributions to choose first among several (a pin's)."""
    want = canonicalize_name(import_name)
    if want in versions:
        return want
    found = [name for name in versions if want in name.split("-")]
    if not found:
        return want
    preferred = [canonicalize_name(p) for p in prefer]
    return min(found, key=lambda n: (n not in preferred, len(n), n))


def changed(a: dict[str, str], b: dict[str, str]) -> list[tuple[str, str | None, str | None]]:
    """(name, version in a, version in b) for every distribution that differs."""
    return [
        (name, a.get(name), b.get(name))
        for name in sorted(set(a) | set(b))
        if a.get(name) != b.get(name)
    ]


def pin_name(requirement: str) -> str:
    """``nvidia-cutlass-dsl==4.5.3`` → ``nvidia-cutlass-dsl``."""
    return canonicalize_name(re.split(r"[\s<>=!~;\[@]", requirement.strip(), maxsplit=1)[0])
