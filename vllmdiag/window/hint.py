"""A static hint, without installing: does a wheel's source of MODULE define or import
ATTR? Read over HTTP range requests (the member list, then one file), so a hint costs a
few small requests. It only chooses which versions to probe first: every verdict at a
boundary still comes from an import probe.

``None`` where the wheel cannot say: the module is compiled, lives in another
distribution (a meta-package such as ``nvidia-cutlass-dsl`` 4.4+), or is star-imported
or built by a module ``__getattr__``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from vllmdiag.errors import VllmdiagError
from vllmdiag.window import index, remote_zip
from vllmdiag.window.index import IndexFile
from vllmdiag.window.versions import file_version


def source_has(source: str, attr: str) -> bool | None:
    """Whether module source defines or imports ``attr``; None if it cannot be told."""
    a = re.escape(attr)
    defined = re.compile(
        rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{a}\b|^[ \t]*{a}[ \t]*(?::[^=\n]*)?=",
        re.M,
    )
    if defined.search(source):
        return True
    for block in re.finditer(
        r"^[ \t]*(?:from[ \t]+\S+[ \t]+)?import[ \t]+(\([^)]*\)|[^\n]*)", source, re.M
    ):
        names = block.group(1)
        if re.search(rf"\b{a}\b", names):
            return True
        if names.strip() == "*":
            return None
    if re.search(r"^def __getattr__\(", source, re.M):
        return None
    return False


def wheel_hint(url: str, module: str, attr: str) -> bool | None:
    try:
        members = {m.name: m for m in remote_zip.members(url)}
    except VllmdiagError:
        return None
    path = module.replace(".", "/")
    wanted = (f"{path}.py", f"{path}/__init__.py")
    # At the wheel's root, or under a directory a .pth file adds to sys.path.
    found = [n for n in members if n in wanted or n.endswith(tuple("/" + w for w in wanted))]
    if not found:
        return None
    name = min(found, key=len)
    try:
        text = remote_zip.read_member(url, members[name]).decode("utf-8", "replace")
    except VllmdiagError:
        return None
    return source_has(text, attr)


def _pinned_deps(wheel: IndexFile) -> list[tuple[str, Version]]:
    try:
        lines = index.requires_dist(index.metadata(wheel))
    except VllmdiagError:
        return []
    out = []
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and "extra" in str(req.marker):
            continue
        pins = [sp.version for sp in req.specifier if sp.operator == "=="]
        if pins and "*" not in pins[0]:
            out.append((req.name, Version(pins[0])))
    return out


def pick_wheel(files: Sequence[IndexFile], version: Version, python: str) -> IndexFile | None:
    """A wheel of ``version`` to read: pure Python first, then this Python's on x86_64."""
    tag = "cp" + python.replace(".", "")
    wheels = [f for f in files if f.is_wheel and not f.yanked and file_version(f) == version]

    def rank(f: IndexFile) -> tuple[bool, bool, bool]:
        return ("-none-any" not in f.filename, tag not in f.filename, "x86_64" not in f.filename)

    return min(wheels, key=rank, default=None)


def hints(
    files: Sequence[IndexFile],
    versions: Sequence[Version],
    symbol: str,
    python: str,
    *,
    jobs: int = 8,
) -> list[bool | None]:
    """One hint per version, read in parallel."""
    module, _, attr = symbol.rpartition(".")

    def in_wheel(wheel: IndexFile, depth: int) -> bool | None:
        found = wheel_hint(wheel.url, module, attr)
        if found is not None or depth == 0:
            return found
        # A meta-package: the module may live in one of its == pins, or theirs.
        for dep, dep_version in _pinned_deps(wheel):
            try:
                dep_files = index.project(dep).files
            except VllmdiagError:
                continue
            dep_wheel = pick_wheel(dep_files, dep_version, python)
            if dep_wheel is not None:
                found = in_wheel(dep_wheel, depth - 1)
                if found is not None:
                    return found
        return None

    def one(v: Version) -> bool | None:
        wheel = pick_wheel(files, v, python)
        return None if wheel is None else in_wheel(wheel, 2)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, versions))
