"""Whether a cached env may be reused: its marker makes sense and what it pinned is
still installed whole.

A marker is written last, after a build passed every check, so a marker that is not a
JSON object with the expected fields is damage, not a format to guess at. An env whose
marker is intact may still have lost files since (a package directory removed by hand,
a cleaner run over the cache): reusing it would make a pin cell fail with
``ModuleNotFoundError`` and the verdict call a sufficient pin "ruled out". So every
requirement of the leg, and every installed distribution it depends on (the code of
``nvidia-cutlass-dsl`` is in a dependency), is checked file by file against its RECORD,
in the env's own python (``probes/installed.py``: one stat per file, about 20 µs each;
see docs/perf-hardening.md). A file that is there but truncated or overwritten would
fail the cell with an error that is the leg's, not the change's: its content is checked
against RECORD's size and SHA-256, hashing each file once while its (device, inode,
size, mtime) stays the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from vllmdiag import probes
from vllmdiag.services import atomic, proc
from vllmdiag.services.envs.spec import parse_requirement

MARKER_FIELDS: dict[str, type | tuple[type, ...]] = {
    "schema": int,
    "key": str,
    "python": str,
    "freeze": list,
    "stack": dict,
    "lock_hash": str,
}


def read_marker(marker: Path, *, schema: int, key: str) -> tuple[dict[str, Any] | None, str]:
    """The marker's data, or None and why it cannot be used ("" when there is none)."""
    if not marker.exists():
        return None, ""
    try:
        data = atomic.read_json(marker)
    except (OSError, ValueError) as exc:
        return None, f"its marker is unreadable ({exc})"
    if not isinstance(data, dict):
        return None, f"its marker is a JSON {type(data).__name__}, not an object"
    bad = [k for k, t in MARKER_FIELDS.items() if not isinstance(data.get(k), t)]
    if bad:
        return None, f"its marker lacks {', '.join(bad)}"
    if data["schema"] != schema or data["key"] != key:
        return None, "its marker is of another vllmdiag version or leg"
    if not all(isinstance(line, str) for line in data["freeze"]):
        return None, "its marker's freeze is not a list of lines"
    return data, ""


def requirement_names(requirements: Iterable[str]) -> list[str]:
    return sorted({parse_requirement(r).name for r in requirements})


@dataclass(frozen=True)
class Damage:
    """What of an env's requirements is not installed whole: ``text`` says it ("" when
    all is), ``dists`` names the distributions with missing or altered files (for uv's
    ``--refresh-package``: its cache may hold the same damaged file)."""

    text: str = ""
    dists: tuple[str, ...] = ()
    altered_only: bool = False  # every problem is a file whose content differs from RECORD


def inspect(python: Path, requirements: Iterable[str], verified: Path | None = None) -> Damage:
    """Check the env's requirements and their dependencies file by file: present, and of
    the size and SHA-256 their RECORD gives (``verified``: where the identities of files
    already hashed are kept, so each file is read once while it stays the same)."""
    names = requirement_names(requirements)
    if not names:
        return Damage()
    cache = ["--verified", str(verified)] if verified is not None else []
    done = proc.run(
        [str(python), str(probes.script("installed")), *cache, *names], capture=True, timeout=1800
    )
    if not done.ok:
        why = (done.stderr or done.stdout)[-300:]
        return Damage(f"its python cannot check what is installed ({why})")
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return Damage(f"the install check printed no JSON ({done.stdout[-300:]!r})")
    problems = [f"{name} is not installed" for name in report.get("missing", [])]
    altered_only = not problems
    dists = []
    for name, info in sorted(report.get("damaged", {}).items()):
        examples = ", ".join(info.get("examples", []))
        parts = []
        if info.get("missing_files"):
            altered_only = False
            parts.append(f"lacks {info['missing_files']} file(s)")
        if info.get("changed_files"):
            parts.append(f"has {info['changed_files']} file(s) whose content is not its RECORD's")
        altered_only = altered_only and bool(info.get("changed_files"))
        problems.append(f"{name} {' and '.join(parts) or 'is damaged'} (e.g. {examples})")
        dists.append(str(info.get("dist") or name))
    return Damage("; ".join(problems), tuple(dists), altered_only=bool(problems) and altered_only)


def damage(python: Path, requirements: Iterable[str], verified: Path | None = None) -> str:
    """Why the env's requirements are not installed whole ("" when they are)."""
    return inspect(python, requirements, verified).text


def pin_problems(requirements: Iterable[str], installed: Mapping[str, str]) -> list[str]:
    """What of ``requirements`` the installed versions (canonical name → version) miss."""
    problems = []
    for text in requirements:
        req = parse_requirement(text)
        got = installed.get(canonicalize_name(req.name))
        if got is None:
            problems.append(f"{req.name} is not installed (wanted {text})")
            continue
        if req.specifier and not _satisfies(req, got):
            problems.append(f"{req.name}=={got} does not satisfy {text}")
    return problems


def _satisfies(req: Requirement, version: str) -> bool:
    try:
        return req.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def freeze_versions(freeze: Iterable[str]) -> dict[str, str]:
    """``uv pip freeze`` lines → distribution name (canonical) → version."""
    out: dict[str, str] = {}
    for line in freeze:
        if "==" in line:
            name, _, ver = line.partition("==")
            out[canonicalize_name(name.strip())] = ver.strip()
        elif " @ " in line:
            name = line.split(" @ ", 1)[0]
            out[canonicalize_name(name.strip())] = "@" + line.split(" @ ", 1)[1]
    return out
