"""A window's static answers (stored ones first, the rest read from the wheels), and the
imports they let start early: two neighbours whose answers differ are a change the
search will import-check on both sides, so those imports start as soon as both answers
are in, while the other reads go on."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from packaging.version import Version

from vllmdiag.jobs.window.probe import Prober, ProbeSpec
from vllmdiag.jobs.window.probe_result import DecidedBy
from vllmdiag.jobs.window.store import ProbeStore, probe_key
from vllmdiag.services.pkgindex.simple_api import IndexFile
from vllmdiag.services.pkgindex.wheel_source import StaticAnswer, read_versions


def static_answers(
    spec: ProbeSpec,
    files: Sequence[IndexFile],
    versions: Sequence[Version],
    store: ProbeStore,
    on_answer: Callable[[int, StaticAnswer], None],
    *,
    extras: frozenset[str],
    use_store: bool,
) -> list[StaticAnswer]:
    """A static answer per version: stored ones first, the rest read from the wheels."""
    keys = [probe_key(spec, str(v), DecidedBy.STATIC) for v in versions]
    known = [store.get_static(k) if use_store else None for k in keys]
    for i, answer in enumerate(known):
        if answer is not None:
            on_answer(i, answer)
    todo = [i for i, a in enumerate(known) if a is None]
    fresh = read_versions(
        files,
        [versions[i] for i in todo],
        spec.symbol,
        spec.python,
        extras=extras,
        on_answer=lambda j, answer: on_answer(todo[j], answer),
    )
    out: list[StaticAnswer] = []
    by_pos = dict(zip(todo, fresh, strict=True))
    for i, key in enumerate(keys):
        answer = known[i] or by_pos[i]
        if i in by_pos and answer.final:
            store.put_static(key, answer)
        out.append(answer)
    return out


class EarlyImports:
    """Starts the imports of both sides of a change the static answers show, as soon as
    both are in (unless stored results answer them)."""

    def __init__(
        self,
        versions: Sequence[Version],
        prober: Prober,
        store: ProbeStore,
        spec: ProbeSpec,
        *,
        use_store: bool,
    ) -> None:
        self.versions = versions
        self.prober = prober
        self.use_store = use_store
        self.store = store
        self.spec = spec
        self.has: dict[int, bool] = {}
        self.lock = threading.Lock()

    def answer(self, i: int, answer: StaticAnswer) -> None:
        if answer.has is None:
            return
        with self.lock:
            self.has[i] = answer.has
            pairs = [(a, b) for a, b in ((i - 1, i), (i, i + 1)) if a in self.has and b in self.has]
        for a, b in pairs:
            if self.has[a] != self.has[b]:
                for pos in (a, b):
                    v = str(self.versions[pos])
                    key = probe_key(self.spec, v, DecidedBy.IMPORT)
                    if not (self.use_store and self.store.get(key)):
                        self.prober.start(v)
