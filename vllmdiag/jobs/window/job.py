"""``window``: which versions of a package carry ``MODULE.ATTR``, and what that means for
the packages that consume it. Emits :data:`~vllmdiag.jobs.window.events.WindowEvent`; returns
a frozen :class:`~vllmdiag.jobs.window.results.WindowResult`; never prints.

Order of work: every argument is checked first (no network), then the index is asked
for the package and each consumer (a name or release that does not exist fails here, in
a second), then the wheels' sources are read (range requests, in parallel) and only the
versions the search needs are installed and imported: both sides of every change, and
those the static read cannot decide.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from packaging.version import Version

from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Observer, ignore
from vllmdiag.jobs.window import consumer_check as cc
from vllmdiag.jobs.window.events import (
    ProbeFinished,
    ResolveStarted,
    StaticReadStarted,
    VersionsListed,
    WindowEvent,
)
from vllmdiag.jobs.window.probe import Prober, ProbeSpec
from vllmdiag.jobs.window.probe_result import DecidedBy, ProbeResult, ProbeStatus
from vllmdiag.jobs.window.request import WindowRequest, check_arguments
from vllmdiag.jobs.window.results import StaticRead, VersionRow, WindowResult
from vllmdiag.jobs.window.search import Row, SearchResult, search, window_specifier
from vllmdiag.jobs.window.static_answers import EarlyImports, static_answers
from vllmdiag.jobs.window.store import ProbeStore, probe_key
from vllmdiag.services import redact
from vllmdiag.services.pkgindex import config, simple_api
from vllmdiag.services.pkgindex.target_python import check_python
from vllmdiag.services.pkgindex.versions import candidates
from vllmdiag.services.pkgindex.wheel_source import StaticAnswer


def find_window(req: WindowRequest, observer: Observer[WindowEvent] = ignore) -> WindowResult:
    start = time.monotonic()
    # 1. What the user typed: no network, no env.
    asked = check_arguments(req)
    pkg, spec, when = asked.package, asked.spec, asked.when
    # 2. The index and the interpreter: a missing package, release or Python fails here.
    index_url = config.configured_index()
    idx = config.custom_index()
    proj = simple_api.project(pkg.name, index_url, where="PKG")
    python, interpreter = check_python(asked.python)
    targets = [
        cc.prepare(text, creq, pkg.name, python, idx, req.exclude_newer)
        for text, creq in zip(req.consumers, asked.consumers, strict=True)
    ]
    versions = [
        c.version
        for c in candidates(proj.files, python=python, spec=spec, pre=req.pre, exclude_newer=when)
    ]
    if not versions:
        raise VllmdiagError(
            f"no release of {pkg.name} is a candidate here (range {spec or 'any'}, "
            f"Python {python}{', before ' + req.exclude_newer if req.exclude_newer else ''})",
            where="--versions" if str(spec) else "PKG",
            hint="widen --versions, add --pre, or check --python and --exclude-newer",
        )
    observer(VersionsListed(pkg.name + asked.extras, tuple(str(v) for v in versions)))
    probe_spec = ProbeSpec(
        requirement=f"{pkg.name}{asked.extras}",
        symbol=req.symbol,
        python=python,
        exclude_newer=req.exclude_newer,
        index_url=idx,
        interpreter=None if interpreter == python else interpreter,
    )
    # 3. The static read, then the search with real imports. Two neighbours whose static
    #    answers differ are a change the search will import-check on both sides: those
    #    imports start as soon as both answers are in, while the other reads go on.
    store = ProbeStore()
    statics: list[StaticAnswer | None] = [None] * len(versions)
    static_s = None
    results: dict[str, ProbeResult] = {}
    stored: set[str] = set()
    with Prober(probe_spec, jobs=req.jobs, observer=observer) as prober:
        if req.static and not req.scan:
            observer(StaticReadStarted(len(versions)))
            t0 = time.monotonic()
            early = EarlyImports(versions, prober, store, probe_spec, use_store=not req.no_cache)
            statics = list(
                static_answers(
                    probe_spec,
                    proj.files,
                    versions,
                    store,
                    early.answer,
                    extras=frozenset(pkg.extras),
                    use_store=not req.no_cache,
                )
            )
            static_s = round(time.monotonic() - t0, 3)
        oracle = _oracle(req, probe_spec, versions, store, results, stored, prober, observer)
        hints = [a.has if a else None for a in statics] if static_s is not None else None
        outcome = search(len(versions), oracle, samples=req.samples, scan=req.scan, static=hints)
        runs = prober.started
    rows = tuple(_row(str(versions[r.index]), r, results, statics[r.index]) for r in outcome.rows)
    wins = tuple(
        window_specifier(versions[w.first], versions[w.end] if w.end is not None else None)
        for w in outcome.windows
    )
    overruled = tuple(str(versions[i]) for i in outcome.static_overruled)
    table = [(v, r.status) for v, r in zip(versions, rows, strict=True)]
    reports = []
    for target in targets:
        observer(ResolveStarted(target.text))
        reports.append(
            cc.report(
                target,
                package=pkg.name,
                symbol=req.symbol,
                python=python,
                index_url=idx,
                exclude_newer=req.exclude_newer,
                table=table,
            )
        )
    return WindowResult.of(
        package=pkg.name + asked.extras,
        symbol=req.symbol,
        python=python,
        index_url=redact.url(index_url),
        versions=rows,
        windows=wins,
        static_read=StaticRead(static_s is not None, static_s or 0.0, overruled),
        consumers=tuple(reports),
        probes_run=runs,
        probes_stored=len(stored),
        notes=_notes(outcome, versions, rows, overruled),
        elapsed_s=round(time.monotonic() - start, 3),
    )


def _oracle(
    req: WindowRequest,
    spec: ProbeSpec,
    versions: Sequence[Version],
    store: ProbeStore,
    results: dict[str, ProbeResult],
    stored: set[str],
    prober: Prober,
    observer: Observer[WindowEvent],
) -> Callable[[Sequence[int]], Mapping[int, ProbeStatus]]:
    def oracle(positions: Sequence[int]) -> Mapping[int, ProbeStatus]:
        todo = []
        for v in (str(versions[i]) for i in positions):
            hit = None if req.no_cache else store.get(probe_key(spec, v, DecidedBy.IMPORT))
            if hit is not None:
                results[v] = hit
                stored.add(v)
                observer(ProbeFinished(hit))
            else:
                todo.append(v)
        for v, r in prober.results(todo).items():
            if r.status is not ProbeStatus.INSTALL_FAILED:  # maybe the network's: retry
                store.put(probe_key(spec, v, DecidedBy.IMPORT), r)
            results[v] = r
        return {i: results[str(versions[i])].status for i in positions}

    return oracle


def _row(
    version: str, r: Row, results: dict[str, ProbeResult], static: StaticAnswer | None
) -> VersionRow:
    if r.probed:
        done = results[version]
        return VersionRow.of(
            version,
            r.status,
            DecidedBy.IMPORT,
            detail=done.detail,
            elapsed_s=done.elapsed_s,
            stored=done.stored,
            static=static,
        )
    if r.static and static is not None:
        return VersionRow.of(
            version,
            r.status,
            DecidedBy.STATIC,
            detail=static.detail,
            stored=static.stored,
            static=static,
        )
    how = DecidedBy.INFERRED if r.status.has_symbol is not None else None
    return VersionRow.of(version, r.status, how, static=static)


def _notes(
    outcome: SearchResult,
    versions: list[Version],
    rows: Sequence[VersionRow],
    overruled: Sequence[str],
) -> tuple[str, ...]:
    notes = []
    for v in overruled:
        got = next(r for r in rows if r.version == v)
        notes.append(
            f"the static read of {v} was contradicted by its import ({got.status.value}): "
            "every static answer was set aside and the versions were decided by import"
        )
    for b in outcome.boundaries:
        if not b.verified:
            notes.append(
                f"the change between {versions[b.before]} and {versions[b.after]} could not "
                "be pinned to one release: the versions between them did not install or import"
            )
    if len(outcome.windows) > 1:
        notes.append("presence changes more than twice: the versions show several windows")
    return tuple(notes)
