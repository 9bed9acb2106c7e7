"""``window``: which versions of a package carry ``MODULE.ATTR``, and what that means for
the packages that consume it. Emits events; returns a frozen report; never prints.

Order of work: every argument is checked first (no network), then the index is asked
for the package and each consumer (a name or release that does not exist fails here, in
a second), then the wheels' sources are read (range requests, in parallel) and only the
versions the search needs are installed and imported: both sides of every change, and
those the static read cannot decide.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from vllmdiag import redact
from vllmdiag.envs.spec import default_python
from vllmdiag.errors import VllmdiagError
from vllmdiag.pkgindex import arguments as args
from vllmdiag.pkgindex import config, simple_api
from vllmdiag.pkgindex.target_python import check_python
from vllmdiag.pkgindex.versions import candidates, parse_date, parse_specifier
from vllmdiag.pkgindex.wheel_source import StaticAnswer
from vllmdiag.window import arguments as window_args
from vllmdiag.window import consumer_check as cc
from vllmdiag.window.model import ProbeResult, Status
from vllmdiag.window.probe import Prober, ProbeSpec
from vllmdiag.window.report import VersionRow, WindowEvent, WindowReport
from vllmdiag.window.search import Row, SearchResult, search, window_specifier
from vllmdiag.window.static_answers import EarlyImports, probe_key, static_answers
from vllmdiag.window.store import ProbeStore


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
    static: bool = True  # read the wheels' sources first; imports confirm every change


Observer = Callable[[WindowEvent], None]


@dataclass(frozen=True)
class _Asked:
    package: Requirement
    spec: SpecifierSet
    when: datetime | None
    consumers: tuple[Requirement, ...]
    python: str


def _check_arguments(req: WindowRequest) -> _Asked:
    """Every argument, without touching the network or an env."""
    pkg = args.package(req.package)
    window_args.symbol(req.symbol)
    if req.versions is not None and pkg.specifier:
        raise VllmdiagError(
            f"the range is given twice: in PKG ({pkg.specifier}) and --versions",
            where="--versions",
            hint="give it once",
        )
    spec = parse_specifier(req.versions if req.versions is not None else str(pkg.specifier))
    when = parse_date(req.exclude_newer) if req.exclude_newer else None
    consumers = tuple(window_args.consumer(text) for text in req.consumers)
    python = args.python_request(req.python or default_python())
    args.at_least(req.jobs, 1, "--jobs")
    args.at_least(req.samples, 0, "samples")
    return _Asked(pkg, spec, when, consumers, python)


def run_window(req: WindowRequest, observer: Observer | None = None) -> WindowReport:
    start = time.monotonic()
    notify = observer or (lambda _e: None)
    # 1. What the user typed: no network, no env.
    asked = _check_arguments(req)
    pkg, spec, when = asked.package, asked.spec, asked.when
    # 2. The index and the interpreter: a missing package, release or Python fails here.
    index_url = config.configured_index()
    idx = None if index_url == config.DEFAULT_INDEX else index_url
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
    notify(WindowEvent("versions", detail=f"{len(versions)} candidate versions"))
    extras = f"[{','.join(sorted(pkg.extras))}]" if pkg.extras else ""
    probe_spec = ProbeSpec(
        requirement=f"{pkg.name}{extras}",
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

    def relay(v: str, r: ProbeResult | None) -> None:
        notify(WindowEvent("probe-start" if r is None else "probe-done", v, "", r))

    with Prober(probe_spec, jobs=req.jobs, observer=relay) as prober:
        if req.static and not req.scan:
            notify(WindowEvent("static", detail=f"reading the sources of {len(versions)} wheels"))
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
            static_s = time.monotonic() - t0
        oracle = _oracle(req, probe_spec, versions, store, results, stored, prober, notify)
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
        notify(WindowEvent("resolve", detail=f"uv pip compile {target.text}"))
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
    return WindowReport(
        pkg.name + extras,
        req.symbol,
        python,
        redact.url(index_url),
        rows,
        wins,
        tuple(reports),
        runs,
        len(stored),
        time.monotonic() - start,
        _notes(outcome, versions, rows, overruled),
        static_s,
        overruled,
    )


def _oracle(
    req: WindowRequest,
    spec: ProbeSpec,
    versions: Sequence[Version],
    store: ProbeStore,
    results: dict[str, ProbeResult],
    stored: set[str],
    prober: Prober,
    notify: Observer,
) -> Callable[[Sequence[int]], Mapping[int, Status]]:
    def oracle(positions: Sequence[int]) -> Mapping[int, Status]:
        todo = []
        for v in (str(versions[i]) for i in positions):
            hit = None if req.no_cache else store.get(probe_key(spec, v, "import"))
            if hit is not None:
                results[v] = hit
                stored.add(v)
                notify(WindowEvent("probe-done", v, "stored", hit))
            else:
                todo.append(v)
        for v, r in prober.results(todo).items():
            if r.status is not Status.INSTALL_FAILED:  # maybe the network's fault: retry
                store.put(probe_key(spec, v, "import"), r)
            results[v] = r
        return {i: results[str(versions[i])].status for i in positions}

    return oracle


def _row(
    version: str, r: Row, results: dict[str, ProbeResult], static: StaticAnswer | None
) -> VersionRow:
    if r.probed:
        done = results[version]
        return VersionRow(
            version, r.status, "import", done.detail, done.elapsed_s, done.stored, static
        )
    if r.static and static is not None:
        return VersionRow(
            version, r.status, "static", static.detail, stored=static.stored, static=static
        )
    how = "inferred" if r.status.has_symbol is not None else None
    return VersionRow(version, r.status, how, static=static)


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
