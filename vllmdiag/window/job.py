"""``window``: which versions of a package carry ``MODULE.ATTR``, and what that means for
the packages that consume it. Emits events; returns a frozen report; never prints."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from packaging.utils import canonicalize_name
from packaging.version import Version

from vllmdiag.envs.spec import default_python, parse_requirement
from vllmdiag.errors import VllmdiagError
from vllmdiag.window import consumers as cons
from vllmdiag.window import index
from vllmdiag.window.hint import hints
from vllmdiag.window.model import ProbeResult, Status
from vllmdiag.window.probe import ProbeSpec, check_python, probe_many
from vllmdiag.window.search import SearchResult, search
from vllmdiag.window.store import ProbeKey, ProbeStore
from vllmdiag.window.verdict import Assessment, assess, conflicting
from vllmdiag.window.versions import candidates, parse_date, parse_specifier, window_specifier


@dataclass(frozen=True)
class WindowRequest:
    package: str  # PKG or PKG[extra]
    symbol: str  # MODULE.ATTR
    versions: str | None = None
    pre: bool = False
    python: str | None = None
    exclude_newer: str | None = None
    consumers: tuple[str, ...] = ()
    scan: bool = False
    jobs: int = 4
    no_cache: bool = False
    samples: int = 3
    hint: bool = False  # read wheels' sources first to choose the probes


@dataclass(frozen=True)
class WindowEvent:
    """``kind``: versions, hint, probe-start, probe-done, resolve."""

    kind: str
    version: str = ""
    detail: str = ""
    result: ProbeResult | None = None


@dataclass(frozen=True)
class VersionRow:
    version: str
    status: Status
    probed: bool
    detail: str = ""
    elapsed_s: float = 0.0
    stored: bool = False
    hint: bool | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "status": self.status.value,
            "probed": self.probed,
            "detail": self.detail,
            "elapsed_s": round(self.elapsed_s, 3),
            "stored": self.stored,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class ConsumerReport:
    requirement: str
    release: str | None
    declared: str | None
    assessment: Assessment | None
    resolves_to: str | None
    resolves_to_as_of: str | None
    constrained_by: tuple[cons.Constraint, ...]
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
    index_url: str
    rows: tuple[VersionRow, ...]
    windows: tuple[str, ...]
    consumers: tuple[ConsumerReport, ...]
    probes_run: int
    probes_stored: int
    elapsed_s: float
    notes: tuple[str, ...] = field(default=())

    @property
    def window(self) -> str | None:
        return self.windows[-1] if self.windows else None

    def to_json(self) -> dict[str, object]:
        return {
            "package": self.package,
            "symbol": self.symbol,
            "python": self.python,
            "index_url": self.index_url,
            "versions": [r.to_json() for r in self.rows],
            "window": self.window,
            "windows": list(self.windows),
            "consumers": [c.to_json() for c in self.consumers],
            "probes_run": self.probes_run,
            "probes_stored": self.probes_stored,
            "notes": list(self.notes),
            "elapsed_s": round(self.elapsed_s, 3),
        }


Observer = Callable[[WindowEvent], None]


def run_window(req: WindowRequest, observer: Observer | None = None) -> WindowReport:
    start = time.monotonic()
    notify = observer or (lambda _e: None)
    pkg = parse_requirement(req.package, where="PKG")
    if "." not in req.symbol.strip(".") or " " in req.symbol:
        raise VllmdiagError(
            f"--symbol {req.symbol!r} is not MODULE.ATTR",
            hint="e.g. --symbol cutlass.cute.core.ThrMma",
        )
    python, interpreter = check_python(req.python or default_python())
    range_text = req.versions if req.versions is not None else (str(pkg.specifier) or None)
    spec = parse_specifier(range_text)
    when = parse_date(req.exclude_newer) if req.exclude_newer else None
    index_url = index.configured_index()
    proj = index.project(pkg.name, index_url)
    found = candidates(proj.files, python=python, spec=spec, pre=req.pre, exclude_newer=when)
    versions = [c.version for c in found]
    notify(WindowEvent("versions", detail=f"{len(versions)} candidate versions"))
    extras = f"[{','.join(sorted(pkg.extras))}]" if pkg.extras else ""
    probe_spec = ProbeSpec(
        requirement=f"{pkg.name}{extras}",
        symbol=req.symbol,
        python=python,
        exclude_newer=req.exclude_newer,
        index_url=None if index_url == index.DEFAULT_INDEX else index_url,
        interpreter=None if interpreter == python else interpreter,
    )
    store = ProbeStore()
    results: dict[str, ProbeResult] = {}
    counts = {"run": 0, "stored": 0}

    def oracle(positions: Sequence[int]) -> Mapping[int, Status]:
        wanted = [str(versions[i]) for i in positions]
        todo = []
        for v in wanted:
            hit = None if req.no_cache else store.get(_key(probe_spec, v))
            if hit is not None:
                results[v] = hit
                counts["stored"] += 1
                notify(WindowEvent("probe-done", v, "stored", hit))
            else:
                todo.append(v)

        def relay(v: str, r: ProbeResult | None) -> None:
            notify(WindowEvent("probe-start" if r is None else "probe-done", v, "", r))

        fresh = probe_many(probe_spec, todo, jobs=req.jobs, observer=relay) if todo else {}
        for v, r in fresh.items():
            if r.status is not Status.INSTALL_FAILED:  # maybe the network's fault: retry
                store.put(_key(probe_spec, v), r)
            results[v] = r
            counts["run"] += 1
        return {i: results[str(versions[i])].status for i in positions}

    guesses: list[bool | None] | None = None
    if req.hint and not req.scan and versions:
        notify(WindowEvent("hint", detail="reading the wheels' sources"))
        guesses = hints(proj.files, versions, req.symbol, python)
    outcome = search(len(versions), oracle, samples=req.samples, scan=req.scan, hints=guesses)
    rows = tuple(
        replace(
            _row(str(versions[r.index]), r.status, r.probed, results),
            hint=guesses[r.index] if guesses else None,
        )
        for r in outcome.rows
    )
    wins = tuple(
        window_specifier(versions[w.first], versions[w.end] if w.end is not None else None)
        for w in outcome.windows
    )
    notes = _notes(outcome, versions)
    reports = tuple(
        _consumer(text, pkg.name, req, python, index_url, versions, rows, notify)
        for text in req.consumers
    )
    return WindowReport(
        pkg.name + extras,
        req.symbol,
        python,
        index_url,
        rows,
        wins,
        reports,
        counts["run"],
        counts["stored"],
        time.monotonic() - start,
        notes,
    )


def _as_of(date: str | None, version: str | None) -> tuple[str, str] | None:
    return (date, version) if date and version else None


def _key(spec: ProbeSpec, version: str) -> ProbeKey:
    return ProbeKey(
        package=spec.requirement,
        version=version,
        python=spec.python,
        symbol=spec.symbol,
        exclude_newer=spec.exclude_newer,
        index_url=spec.index_url,
    )


def _row(version: str, status: Status, probed: bool, results: dict[str, ProbeResult]) -> VersionRow:
    r = results.get(version) if probed else None
    if r is None:
        return VersionRow(version, status, probed)
    return VersionRow(version, status, True, r.detail, r.elapsed_s, r.stored)


def _notes(outcome: SearchResult, versions: list[Version]) -> tuple[str, ...]:
    notes = []
    for b in outcome.boundaries:
        if not b.verified:
            notes.append(
                f"the change between {versions[b.before]} and {versions[b.after]} could not "
                "be pinned to one release: the versions between them did not install or import"
            )
    if len(outcome.windows) > 1:
        notes.append("presence changes more than twice: the versions show several windows")
    return tuple(notes)


def _consumer(
    text: str,
    package: str,
    req: WindowRequest,
    python: str,
    index_url: str,
    versions: list[Version],
    rows: tuple[VersionRow, ...],
    notify: Observer,
) -> ConsumerReport:
    creq = cons.parse_consumer(text)
    idx = None if index_url == index.DEFAULT_INDEX else index_url
    release = cons.consumer_version(creq, python, idx, req.exclude_newer)
    meta = cons.release_metadata(creq.name, release, python, idx)
    declared = cons.declared_specifier(cons.requirements_on(meta, package, python))
    notify(WindowEvent("resolve", detail=f"uv pip compile {text}"))
    today = cons.fresh_resolve(text, python, exclude_newer=None, index_url=idx)
    as_of = (
        cons.fresh_resolve(text, python, exclude_newer=req.exclude_newer, index_url=idx)
        if req.exclude_newer
        else None
    )
    name = canonicalize_name(package)
    picked = today.pins.get(name)
    constrained = tuple(cons.constraints(today, package, python, idx)) if picked else ()
    table = [(v, r.status) for v, r in zip(versions, rows, strict=True)]
    assessment = assess(
        consumer=f"{creq.name}=={release}",
        package=package,
        symbol=req.symbol,
        declared=declared,
        rows=table,
        resolves_to=picked,
        as_of=_as_of(req.exclude_newer, as_of.pins.get(name) if as_of else None),
    )
    clash = conflicting([(f"{k.package}=={k.version}", k.specifier) for k in constrained], table)
    if clash:
        more = "; ".join(clash)
        assessment = replace(assessment, verdict=f"{assessment.verdict} In today's resolve {more}.")
    return ConsumerReport(
        requirement=text,
        release=release,
        declared=declared,
        assessment=assessment,
        resolves_to=picked,
        resolves_to_as_of=as_of.pins.get(name) if as_of else None,
        constrained_by=constrained,
        resolve_error=today.error,
    )
