"""Stored probe results: one small JSON file per (package, version, python, platform,
symbol, resolver settings, method) under ``<cache>/probes/``, so a repeated question is
answered without installing or reading anything. ``method`` is ``import`` (a real probe)
or ``static`` (what the wheels' source said). Each file is a :class:`StoredProbe`
written through :mod:`vllmdiag.codec`; writes are atomic; a file that cannot be read
back as one (torn, another schema, another key) is simply a miss. The index URL in a key
is stored redacted."""

from __future__ import annotations

import hashlib
import json
import sysconfig
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.utils import canonicalize_name

from vllmdiag import codec
from vllmdiag.jobs.window.probe import ProbeSpec
from vllmdiag.jobs.window.probe_result import DecidedBy, ProbeResult, ProbeStatus
from vllmdiag.services import atomic, redact
from vllmdiag.services.paths import cache_root
from vllmdiag.services.pkgindex.wheel_source import StaticAnswer

SCHEMA = 3


@dataclass(frozen=True)
class ProbeKey:
    package: str  # the requirement name with extras, e.g. nvidia-cutlass-dsl[cu13]
    version: str
    python: str
    symbol: str
    exclude_newer: str | None = None
    index_url: str | None = None  # redacted: the store never holds a password
    platform: str = sysconfig.get_platform()
    method: DecidedBy = DecidedBy.IMPORT  # IMPORT or STATIC
    schema: int = SCHEMA

    def digest(self) -> str:
        blob = json.dumps(codec.dump(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:20]


def probe_key(spec: ProbeSpec, version: str, method: DecidedBy) -> ProbeKey:
    """The key of ``version``'s answer by ``method`` (a static read does not depend on
    ``--exclude-newer``: the wheel of a release does not change)."""
    return ProbeKey(
        package=spec.requirement,
        version=version,
        python=spec.python,
        symbol=spec.symbol,
        exclude_newer=spec.exclude_newer if method is DecidedBy.IMPORT else None,
        index_url=redact.url(spec.index_url) if spec.index_url else None,
        method=method,
    )


@dataclass(frozen=True)
class StoredProbe:
    """One stored answer: an import probe's ``result`` or a static read's ``static``."""

    key: ProbeKey
    result: ProbeResult | None = None
    static: StaticAnswer | None = None


class ProbeStore:
    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_root()) / "probes"

    def path(self, key: ProbeKey) -> Path:
        name = canonicalize_name(key.package.split("[", 1)[0])
        return self.root / name / f"{key.digest()}.json"

    def get(self, key: ProbeKey) -> ProbeResult | None:
        found = self._read(key)
        result = found.result if found else None
        if result is None or result.status is ProbeStatus.NOT_PROBED:
            return None
        return replace(result, stored=True)

    def put(self, key: ProbeKey, result: ProbeResult) -> None:
        self._write(StoredProbe(key, result=result))

    def get_static(self, key: ProbeKey) -> StaticAnswer | None:
        found = self._read(key)
        return replace(found.static, stored=True) if found and found.static else None

    def put_static(self, key: ProbeKey, answer: StaticAnswer) -> None:
        self._write(StoredProbe(key, static=answer))

    def _read(self, key: ProbeKey) -> StoredProbe | None:
        try:
            found = codec.load(StoredProbe, atomic.read_json(self.path(key)))
        except (OSError, ValueError):  # missing, torn, or not a StoredProbe
            return None
        return found if found.key == key else None

    def _write(self, record: StoredProbe) -> None:
        atomic.write_json(self.path(record.key), codec.dump(record))
