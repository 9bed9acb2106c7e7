"""What ``window`` answers: frozen rows, consumer verdicts and the report, with their
JSON form. Every URL in them is redacted."""

from __future__ import annotations

from dataclasses import dataclass, field

from vllmdiag import codec
from vllmdiag.pkgindex.wheel_source import StaticAnswer
from vllmdiag.window.consumers import Constraint
from vllmdiag.window.model import ProbeResult, Status
from vllmdiag.window.verdict import Assessment


@dataclass(frozen=True)
class WindowEvent:
    """``kind``: versions, static, probe-start, probe-done, resolve."""

    kind: str
    version: str = ""
    detail: str = ""
    result: ProbeResult | None = None


@dataclass(frozen=True)
class VersionRow:
    """One version. ``decided_by``: ``import`` (a real install and import), ``static``
    (the wheel's source read without installing), ``inferred`` (from its decided
    neighbours) or None (undecided). ``stored``: the answer came from stored results."""

    version: str
    status: Status
    decided_by: str | None
    detail: str = ""
    elapsed_s: float = 0.0
    stored: bool = False
    static: StaticAnswer | None = None

    @property
    def probed(self) -> bool:
        return self.decided_by == "import"

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "status": self.status.value,
            "decided_by": self.decided_by,
            "probed": self.probed,
            "detail": self.detail,
            "elapsed_s": round(self.elapsed_s, 3),
            "stored": self.stored,
            "static": codec.dump(self.static) if self.static else None,
        }


@dataclass(frozen=True)
class ConsumerReport:
    requirement: str
    release: str | None
    declared: str | None
    assessment: Assessment | None
    resolves_to: str | None
    resolves_to_as_of: str | None
    constrained_by: tuple[Constraint, ...]
    resolve_error: str | None = None

    def to_json(self) -> dict[str, object]:
        a = self.assessment
        return {
            "requirement": self.requirement,
            "release": self.release,
            "declared": self.declared,
            "admitted_with_symbol": list(a.admitted_with) if a else [],
            "admitted_without_symbol": list(a.admitted_without) if a else [],
            "admitted_undecided": list(a.admitted_unknown) if a else [],
            "resolves_to": self.resolves_to,
            "resolves_to_as_of": self.resolves_to_as_of,
            "constrained_by": [c.to_json() for c in self.constrained_by],
            "suggested_bound": a.suggested_bound if a else None,
            "suggested_specifier": a.suggested_specifier if a else None,
            "verdict": a.verdict if a else (self.resolve_error or ""),
            "resolve_error": self.resolve_error,
        }


@dataclass(frozen=True)
class WindowReport:
    package: str
    symbol: str
    python: str
    index_url: str  # redacted
    rows: tuple[VersionRow, ...]
    windows: tuple[str, ...]
    consumers: tuple[ConsumerReport, ...]
    probes_run: int
    probes_stored: int
    elapsed_s: float
    notes: tuple[str, ...] = field(default=())
    static_read_s: float | None = None  # None: no static read (--scan, --no-static)
    static_overruled: tuple[str, ...] = ()  # versions where an import contradicted it

    @property
    def window(self) -> str | None:
        return self.windows[-1] if self.windows else None

    def decided_by(self, how: str) -> list[str]:
        return [r.version for r in self.rows if r.decided_by == how]

    def to_json(self) -> dict[str, object]:
        return {
            "package": self.package,
            "symbol": self.symbol,
            "python": self.python,
            "index_url": self.index_url,
            "versions": [r.to_json() for r in self.rows],
            "window": self.window,
            "windows": list(self.windows),
            "decided_by_import": self.decided_by("import"),
            "decided_statically": self.decided_by("static"),
            "inferred": self.decided_by("inferred"),
            "static_read": {
                "used": self.static_read_s is not None,
                "elapsed_s": round(self.static_read_s or 0.0, 3),
                "overruled_at": list(self.static_overruled),
            },
            "consumers": [c.to_json() for c in self.consumers],
            "probes_run": self.probes_run,
            "probes_stored": self.probes_stored,
            "notes": list(self.notes),
            "elapsed_s": round(self.elapsed_s, 3),
        }
