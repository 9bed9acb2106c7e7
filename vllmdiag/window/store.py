"""Stored probe results: one small JSON file per (package, version, python, platform,
symbol, resolver settings, method) under ``<cache>/probes/``, so a repeated question is
answered without installing or reading anything. ``method`` is ``import`` (a real probe)
or ``static`` (what the wheels' source said). Writes are atomic; an unreadable file is
simply a miss. The index URL in a key is stored redacted."""

from __future__ import annotations

import hashlib
import json
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from vllmdiag import atomic
from vllmdiag.paths import cache_root
from vllmdiag.pkgindex.wheel_source import Presence, StaticAnswer
from vllmdiag.window.model import ProbeResult, Status

SCHEMA = 2


@dataclass(frozen=True)
class ProbeKey:
    package: str  # the requirement name with extras, e.g. nvidia-cutlass-dsl[cu13]
    version: str
    python: str
    symbol: str
    exclude_newer: str | None = None
    index_url: str | None = None  # redacted: the store never holds a password
    platform: str = sysconfig.get_platform()
    method: str = "import"

    def identity(self) -> dict[str, object]:
        return {
            "schema": SCHEMA,
            "package": self.package,
            "version": self.version,
            "python": self.python,
            "platform": self.platform,
            "symbol": self.symbol,
            "exclude_newer": self.exclude_newer,
            "index_url": self.index_url,
            "method": self.method,
        }

    def digest(self) -> str:
        blob = json.dumps(self.identity(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:20]


class ProbeStore:
    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_root()) / "probes"

    def path(self, key: ProbeKey) -> Path:
        name = canonicalize_name(key.package.split("[", 1)[0])
        return self.root / name / f"{key.digest()}.json"

    def get(self, key: ProbeKey) -> ProbeResult | None:
        try:
            data = atomic.read_json(self.path(key))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != key.identity():
            return None
        try:
            result = ProbeResult.from_json(data["result"])
        except (KeyError, ValueError, TypeError):
            return None
        if result.status is Status.NOT_PROBED:
            return None
        return ProbeResult(result.version, result.status, result.detail, result.elapsed_s, True)

    def put(self, key: ProbeKey, result: ProbeResult) -> None:
        atomic.write_json(self.path(key), {"key": key.identity(), "result": result.to_json()})

    def get_static(self, key: ProbeKey) -> StaticAnswer | None:
        try:
            data = atomic.read_json(self.path(key))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != key.identity():
            return None
        raw = data.get("static")
        if not isinstance(raw, dict) or raw.get("has") not in (True, False, None):
            return None
        return StaticAnswer(
            Presence.of(raw["has"]),
            str(raw.get("detail", "")),
            stored=True,
            wheel=str(raw.get("wheel") or "") or None,
        )

    def put_static(self, key: ProbeKey, answer: StaticAnswer) -> None:
        atomic.write_json(
            self.path(key),
            {
                "key": key.identity(),
                "static": {"has": answer.has, "detail": answer.detail, "wheel": answer.wheel},
            },
        )
