"""What ``window`` answers, as frozen values: a row per version, a verdict per consumer,
and the :class:`WindowResult`. Their JSON form comes from :mod:`vllmdiag.codec`: field
names are the JSON keys, and values that summarise others (``probed``, ``window``, the
``decided_by_*`` lists) are fields computed when the result is built. Every URL in them
is redacted."""

from __future__ import annotations

from dataclasses import dataclass

from vllmdiag.jobs.window.declared_range import Assessment
from vllmdiag.jobs.window.probe_result import DecidedBy, ProbeStatus
from vllmdiag.services.pkgindex.wheel_source import StaticAnswer


@dataclass(frozen=True)
class VersionRow:
    """One version. ``decided_by``: None where it stayed undecided; ``probed``: decided
    by an import now or before (then ``stored``); ``static``: the wheels' source read,
    where it was."""

    version: str
    status: ProbeStatus
    decided_by: DecidedBy | None
    probed: bool
    detail: str = ""
    elapsed_s: float = 0.0
    stored: bool = False
    static: StaticAnswer | None = None

    @classmethod
    def of(
        cls,
        version: str,
        status: ProbeStatus,
        decided_by: DecidedBy | None,
        *,
        detail: str = "",
        elapsed_s: float = 0.0,
        stored: bool = False,
        static: StaticAnswer | None = None,
    ) -> VersionRow:
        probed = decided_by is DecidedBy.IMPORT
        return cls(version, status, decided_by, probed, detail, elapsed_s, stored, static)


@dataclass(frozen=True)
class Constraint:
    """``package==version`` in a resolve requires ``requires`` of the package."""

    package: str
    version: str
    requires: str

    def __str__(self) -> str:
        return f"{self.package}=={self.version} requires {self.requires or '(any)'}"


@dataclass(frozen=True)
class ConsumerReport:
    """One ``--consumer``: its release, what it declares on the package, which versions
    that admits (by what they have), today's resolve (and as of ``--exclude-newer``),
    who else in it constrains the package, and the verdict with the bound to suggest."""

    requirement: str
    release: str | None
    declared: str | None
    admitted_with_symbol: tuple[str, ...]
    admitted_without_symbol: tuple[str, ...]
    admitted_undecided: tuple[str, ...]
    resolves_to: str | None
    resolves_to_as_of: str | None
    constrained_by: tuple[Constraint, ...]
    suggested_bound: str | None
    suggested_specifier: str | None
    verdict: str
    resolve_error: str | None = None

    @classmethod
    def of(
        cls,
        requirement: str,
        release: str | None,
        declared: str | None,
        assessment: Assessment,
        *,
        resolves_to: str | None,
        resolves_to_as_of: str | None,
        constrained_by: tuple[Constraint, ...],
        resolve_error: str | None,
    ) -> ConsumerReport:
        a = assessment
        return cls(
            requirement,
            release,
            declared,
            a.admitted_with_symbol,
            a.admitted_without_symbol,
            a.admitted_undecided,
            resolves_to,
            resolves_to_as_of,
            constrained_by,
            a.suggested_bound,
            a.suggested_specifier,
            a.verdict,
            resolve_error,
        )


@dataclass(frozen=True)
class StaticRead:
    """Whether the wheels' sources were read first (not with ``--scan``/``--no-static``),
    how long that took, and the versions whose import contradicted it."""

    used: bool
    elapsed_s: float = 0.0
    overruled_at: tuple[str, ...] = ()


@dataclass(frozen=True)
class WindowResult:
    """Every version examined (``versions``), the windows of versions that have the
    symbol as specifiers (``window``: the newest), how each version was decided, the
    consumers' verdicts, and what it cost."""

    package: str
    symbol: str
    python: str
    index_url: str  # redacted
    versions: tuple[VersionRow, ...]
    window: str | None
    windows: tuple[str, ...]
    decided_by_import: tuple[str, ...]
    decided_statically: tuple[str, ...]
    inferred: tuple[str, ...]
    static_read: StaticRead
    consumers: tuple[ConsumerReport, ...]
    probes_run: int
    probes_stored: int
    notes: tuple[str, ...]
    elapsed_s: float

    @classmethod
    def of(
        cls,
        *,
        package: str,
        symbol: str,
        python: str,
        index_url: str,
        versions: tuple[VersionRow, ...],
        windows: tuple[str, ...],
        static_read: StaticRead,
        consumers: tuple[ConsumerReport, ...],
        probes_run: int,
        probes_stored: int,
        notes: tuple[str, ...],
        elapsed_s: float,
    ) -> WindowResult:
        def by(how: DecidedBy) -> tuple[str, ...]:
            return tuple(r.version for r in versions if r.decided_by is how)

        return cls(
            package,
            symbol,
            python,
            index_url,
            versions,
            windows[-1] if windows else None,
            windows,
            by(DecidedBy.IMPORT),
            by(DecidedBy.STATIC),
            by(DecidedBy.INFERRED),
            static_read,
            consumers,
            probes_run,
            probes_stored,
            notes,
            elapsed_s,
        )
