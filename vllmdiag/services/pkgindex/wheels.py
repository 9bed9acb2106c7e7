"""Which wheel of a release installs here, and which releases it pins exactly (``==``).

A meta-package such as ``nvidia-cutlass-dsl`` 4.4+ ships its modules in wheels it pins;
reading a module out of it means following those pins to the wheels that would install.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import TypeVar

from packaging import tags
from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from vllmdiag.services.pkgindex import simple_api
from vllmdiag.services.pkgindex.simple_api import IndexFile

T = TypeVar("T")
Pin = tuple[str, Version, frozenset[str]]  # name, the pinned version, its extras


@lru_cache(maxsize=8)
def _tag_rank(python: str) -> dict[tags.Tag, int]:
    major, minor = (int(p) for p in python.split(".")[:2])
    platforms = list(tags.platform_tags())
    found = [
        *tags.cpython_tags((major, minor), platforms=platforms),
        *tags.compatible_tags((major, minor), platforms=platforms),
    ]
    return {tag: i for i, tag in reversed(list(enumerate(found)))}


def pick_wheel(files: Sequence[IndexFile], version: Version, python: str) -> IndexFile | None:
    """The wheel of ``version`` an installer would pick here for ``python`` (X.Y)."""
    rank = _tag_rank(python)
    best: tuple[int, IndexFile] | None = None
    for f in files:
        if not f.is_wheel or f.yanked:
            continue
        parsed = _wheel_name(f.filename)
        if parsed is None or parsed[0] != version:
            continue
        score = min((rank[t] for t in parsed[1] if t in rank), default=None)
        if score is not None and (best is None or score < best[0]):
            best = (score, f)
    return best[1] if best else None


@lru_cache(maxsize=65536)
def _wheel_name(filename: str) -> tuple[Version, frozenset[tags.Tag]] | None:
    try:
        _, version, _, wheel_tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    return version, wheel_tags


def pinned_wheel(name: str, version: Version, python: str) -> IndexFile | None:
    """The wheel of ``name==version`` that installs here."""
    return pick_wheel(simple_api.project(name).files, version, python)


def exact_pins(wheel: IndexFile, python: str, extras: frozenset[str]) -> list[Pin]:
    """The ``==`` requirements of ``wheel`` that apply on ``python`` with ``extras``."""
    env = {k: str(v) for k, v in default_environment().items()}
    env.update(python_version=python, python_full_version=f"{python}.0")
    out = []
    for line in simple_api.requires_dist(simple_api.metadata(wheel)):
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not any(
            req.marker.evaluate({**env, "extra": e}) for e in ("", *extras)
        ):
            continue
        pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
        if len(pins) == 1 and "*" not in pins[0]:
            try:
                out.append((req.name, Version(pins[0]), frozenset(req.extras)))
            except InvalidVersion:
                continue
    return out


def parallel(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run ``calls`` at once (they wait on the network) and return their results."""
    if len(calls) <= 1:
        return [c() for c in calls]
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return [f.result() for f in [pool.submit(c) for c in calls]]
