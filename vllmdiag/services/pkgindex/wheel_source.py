"""What a version's wheels say about ``MODULE.ATTR``, without installing anything.

For one version: the wheel that would install here (this platform, the probe's Python),
then, while the module is not found, the wheels of its ``==`` pins (a meta-package such
as ``nvidia-cutlass-dsl`` 4.4+ ships its modules in ``-libs-*`` wheels). Member lists
and the few files needed are read by HTTP range requests. The module's file decides
(:mod:`vllmdiag.services.pkgindex.source_binding`), with its parent packages' ``__init__`` files.

Undecided, with the reason, when the module is compiled or sourceless, found nowhere or
in more than one place on ``sys.path``, under a directory no ``.pth`` file adds, shadowed
by a submodule of the attribute's name, or when the index cannot be read.
"""

from __future__ import annotations

import re
import struct
import threading
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from functools import partial

from packaging.version import Version

from vllmdiag.errors import VllmdiagError
from vllmdiag.services.pkgindex import remote_zip
from vllmdiag.services.pkgindex.remote_zip import Member
from vllmdiag.services.pkgindex.simple_api import IndexFile
from vllmdiag.services.pkgindex.source_binding import Reading, module_binds, parent_touches
from vllmdiag.services.pkgindex.wheels import exact_pins, parallel, pick_wheel, pinned_wheel

MAX_DEPTH = 3  # nvidia-cutlass-dsl -> -libs-base -> -libs-core
_EXTENSION = re.compile(r"\.(?:[^/.]+\.)?(?:so|pyd)$")

Held = dict[str, tuple[IndexFile, Member]]  # member name -> (its wheel, the member)


class Presence(str, Enum):
    """What a static read says of ``MODULE.ATTR`` in one version."""

    PRESENT = "present"
    ABSENT = "absent"
    UNDECIDED = "undecided"

    @classmethod
    def of(cls, has: bool | None) -> Presence:
        return cls.UNDECIDED if has is None else cls.PRESENT if has else cls.ABSENT

    @property
    def has(self) -> bool | None:
        return None if self is Presence.UNDECIDED else self is Presence.PRESENT


@dataclass(frozen=True)
class StaticAnswer:
    """One version's static read: ``answer`` and why (``detail``), ``wheel``: the wheel
    whose file decided. ``final``: False when the index could not be read (worth another
    try, so not stored); ``stored``: answered from stored results, not read now."""

    answer: Presence
    detail: str
    wheel: str | None = None
    final: bool = True
    stored: bool = False

    @property
    def has(self) -> bool | None:
        """True/False when the read is conclusive, None otherwise."""
        return self.answer.has


def _undecided(detail: str, *, final: bool = True) -> StaticAnswer:
    return StaticAnswer(Presence.UNDECIDED, detail, final=final)


def read_versions(
    files: Sequence[IndexFile],
    versions: Sequence[Version],
    symbol: str,
    python: str,
    *,
    extras: frozenset[str] = frozenset(),
    jobs: int = 32,
    on_answer: Callable[[int, StaticAnswer], None] | None = None,
) -> list[StaticAnswer]:
    """One answer per version, read in parallel; ``on_answer(position, answer)`` as each
    one arrives (from a worker thread)."""
    module, _, attr = symbol.rpartition(".")

    def one(i: int) -> StaticAnswer:
        answer = read_version(files, versions[i], module, attr, python, extras=extras)
        if on_answer is not None:
            on_answer(i, answer)
        return answer

    if not versions:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(versions)))) as pool:
        return list(pool.map(one, range(len(versions))))


def read_version(
    files: Sequence[IndexFile],
    version: Version,
    module: str,
    attr: str,
    python: str,
    *,
    extras: frozenset[str] = frozenset(),
) -> StaticAnswer:
    top = pick_wheel(files, version, python)
    if top is None:
        return _undecided(f"no wheel of {version} for Python {python} on this platform")
    try:
        held = _gather(top, module, python, extras)
        return _decide(held, module, attr)
    except VllmdiagError as exc:  # the index: worth another try later
        return _undecided(f"could not read the wheels: {exc.message}", final=False)
    except (zlib.error, struct.error, UnicodeError, ValueError, LookupError) as exc:
        # A wheel this reader cannot take apart: the import decides instead.
        return _undecided(f"could not read {top.filename}: {exc.__class__.__name__}")


def _gather(top: IndexFile, module: str, python: str, extras: frozenset[str]) -> Held:
    """Members of ``top``, then of its ``==`` pins (breadth first) until one holds
    ``module``. Each level's member lists and pins are read in parallel."""
    held: Held = {}
    level = [(top, extras)]
    seen = {top.url}
    for depth in range(MAX_DEPTH + 1):
        lists = parallel([partial(remote_zip.members, w.url) for w, _ in level])
        pins = parallel([partial(exact_pins, w, python, e) for w, e in level])
        for (wheel, _), found in zip(level, lists, strict=True):
            for m in found:
                held.setdefault(m.name, (wheel, m))
        if _roots(held, module) or depth == MAX_DEPTH:
            break
        wanted = [pin for per_wheel in pins for pin in per_wheel]
        deps = parallel([partial(pinned_wheel, n, v, python) for n, v, _ in wanted])
        level = []
        for (_, _, dep_extras), dep in zip(wanted, deps, strict=True):
            if dep is not None and dep.url not in seen:
                seen.add(dep.url)
                level.append((dep, dep_extras))
        if not level:
            break
    return held


def _roots(held: Held, module: str) -> set[str]:
    """Prefixes under which a file of ``module`` (source, package or compiled) lies."""
    path = module.replace(".", "/")
    out = set()
    for name in held:
        for tail in (f"{path}.py", f"{path}/__init__.py", f"{path}.pyc"):
            if name == tail or name.endswith("/" + tail):
                out.add(name[: len(name) - len(tail)])
        stem = _EXTENSION.sub("", name)
        for tail in (path, f"{path}/__init__"):
            if stem != name and (stem == tail or stem.endswith("/" + tail)):
                out.add(stem[: len(stem) - len(tail)])
    return out


def _on_sys_path(prefix: str, held: Held) -> bool:
    """The wheel root is; a directory below it only when a ``.pth`` file names it."""
    if not prefix:
        return True
    parts = [p for p in prefix.split("/") if p]
    pth = [n for n in held if "/" not in n and n.endswith(".pth")]
    for name in pth:
        wheel, member = held[name]
        text = remote_zip.read_member(wheel.url, member).decode("utf-8", "replace")
        if all(part in text for part in parts):
            return True
    return False


def _decide(held: Held, module: str, attr: str) -> StaticAnswer:
    roots = sorted(r for r in _roots(held, module) if _on_sys_path(r, held))
    if not roots:
        return _undecided(f"{module} is not in the wheels read (or not on sys.path)")
    if len(roots) > 1:
        return _undecided(f"{module} lies in {len(roots)} places on sys.path")
    root, path = roots[0], module.replace(".", "/")
    compiled = [n for n in held if n.startswith(root + path) and _EXTENSION.search(n)]
    if any(_EXTENSION.sub("", n) in (root + path, root + path + "/__init__") for n in compiled):
        return _undecided(f"{module} is a compiled extension")
    is_package = f"{root}{path}/__init__.py" in held
    name = f"{root}{path}/__init__.py" if is_package else f"{root}{path}.py"
    if name not in held:
        return _undecided(f"{module} ships without source")
    sub = f"{root}{path}/{attr}"
    if is_package and any(
        n.startswith(sub + "/") or n == sub + ".py" or _EXTENSION.sub("", n) == sub for n in held
    ):
        return _undecided(f"{module}.{attr} may be a submodule")
    parts = module.split(".")
    inits = [f"{root}{'/'.join(parts[:i])}/__init__.py" for i in range(1, len(parts))]
    inits = [n for n in inits if n in held]

    def touches(init: str) -> Reading:
        return _once(
            held[init][1],
            ("parent", attr),
            lambda: Reading(
                None, parent_touches(_text(held, init), attr, filename=init[len(root) :]) or ""
            ),
        )

    def binds() -> Reading:
        return _once(
            held[name][1],
            ("module", attr),
            lambda: module_binds(_text(held, name), attr, filename=name[len(root) :]),
        )

    *parents, reading = parallel([*(lambda n=n: touches(n) for n in inits), binds])
    for parent in parents:
        if parent.why:
            return _undecided(parent.why)
    return StaticAnswer(Presence.of(reading.has), reading.why, wheel=held[name][0].filename)


_READINGS: dict[tuple[object, ...], Future[Reading]] = {}
_READINGS_LOCK = threading.Lock()


def _once(member: Member, what: tuple[str, str], read: Callable[[], Reading]) -> Reading:
    """``read()`` once per content (CRC-32 and size): patch releases often ship the same
    file, and a second thread asking for it waits for the first instead of reading it."""
    key = (member.crc, member.size, member.compressed, *what)
    with _READINGS_LOCK:
        fut = _READINGS.get(key)
        mine = fut is None
        if fut is None:
            fut = _READINGS[key] = Future()
    if mine:
        try:
            fut.set_result(read())
        except BaseException as exc:
            with _READINGS_LOCK:
                _READINGS.pop(key, None)
            fut.set_exception(exc)
    return fut.result()


def _text(held: Held, name: str) -> str:
    wheel, member = held[name]
    return remote_zip.read_member(wheel.url, member).decode("utf-8", "replace")
