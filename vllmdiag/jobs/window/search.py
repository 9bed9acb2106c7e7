"""Where a symbol appears and disappears across an ordered list of versions.

Pure: the caller supplies an oracle that import-probes a batch of positions (so it may
probe them in parallel) and returns a :class:`ProbeStatus` for each, and optionally the
static answers read from the wheels (True/False where the read was conclusive, None
where not).
The search assumes presence changes at most twice (the symbol appears, later
disappears), so it

1. import-probes both ends and a few interior samples, except where the static read
   already decided them (a window that opens and closes between the ends shows up in a
   sample or in the static answers),
2. binary-searches every change between two neighbouring decided positions, stepping
   around versions whose probe cannot decide (install failures, import errors: skips),
3. import-probes both sides of every change, so a boundary is always measured; with no
   change at all, the newest version is import-probed,

and infers the rest. A static answer that an import contradicts is never kept: the whole
static read is set aside and the search runs on imports alone (``static_overruled``).
``scan`` import-probes every position instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from packaging.version import Version

from vllmdiag.jobs.window.probe_result import ProbeStatus

Oracle = Callable[[Sequence[int]], Mapping[int, ProbeStatus]]


@dataclass(frozen=True)
class Row:
    """``probed``: decided by an import now; ``static``: decided by the static read;
    neither: inferred from its decided neighbours (or not decided at all)."""

    index: int
    status: ProbeStatus
    probed: bool
    static: bool = False


@dataclass(frozen=True)
class Boundary:
    """A change between the decided position ``before`` and the one at ``after``.

    ``appears`` is True where the symbol is present from ``after`` on. ``verified``: both
    sides were import-probed and nothing lies between them.
    """

    before: int
    after: int
    appears: bool
    verified: bool


@dataclass(frozen=True)
class Window:
    """Positions ``first`` .. ``last`` (inclusive) have the symbol; ``end`` is the first
    position after the window (None: it runs to the newest version)."""

    first: int
    last: int
    end: int | None


@dataclass(frozen=True)
class SearchResult:
    rows: tuple[Row, ...]
    boundaries: tuple[Boundary, ...]
    windows: tuple[Window, ...]
    probes: int
    static_overruled: tuple[int, ...] = ()  # where an import contradicted the static read


def search(
    n: int,
    oracle: Oracle,
    *,
    samples: int = 3,
    scan: bool = False,
    static: Sequence[bool | None] | None = None,
) -> SearchResult:
    """Decide presence for positions ``0 .. n-1`` with as few import probes as it can."""
    found: dict[int, ProbeStatus] = {}
    trusted = _static_statuses(n, static) if not scan else {}
    overruled: list[int] = []

    def ask(positions: Sequence[int]) -> None:
        new = [i for i in dict.fromkeys(positions) if 0 <= i < n and i not in found]
        if new:
            answer = oracle(new)
            for i in new:
                found[i] = answer.get(i, ProbeStatus.NOT_PROBED)

    def view() -> dict[int, ProbeStatus]:
        return {**trusted, **found}

    def opening() -> list[int]:
        decided = view()
        return [i for i in [0, n - 1, *sample_positions(n, samples)] if i not in decided]

    if n == 0:
        return SearchResult((), (), (), 0)
    if scan:
        ask(range(n))
    else:
        ask(opening())
        while True:
            wrong = _contradicted(trusted, found)
            if wrong:
                overruled += wrong
                trusted = {}
                ask(opening())
                continue
            batch = _next_batch(n, view(), found, bool(trusted))
            if not batch:
                break
            ask(batch)
    final = view()
    rows = infer_rows(n, final, probed=set(found))
    return SearchResult(
        rows, boundaries(final, set(found)), windows(rows), len(found), tuple(overruled)
    )


def _static_statuses(n: int, static: Sequence[bool | None] | None) -> dict[int, ProbeStatus]:
    if static is None or len(static) != n:
        return {}
    return {
        i: ProbeStatus.PRESENT if s else ProbeStatus.ABSENT
        for i, s in enumerate(static)
        if s is not None
    }


def _contradicted(
    trusted: Mapping[int, ProbeStatus], found: Mapping[int, ProbeStatus]
) -> list[int]:
    return [
        i
        for i, s in found.items()
        if i in trusted and s.has_symbol is not None and s.has_symbol != trusted[i].has_symbol
    ]


def _next_batch(
    n: int, decided: Mapping[int, ProbeStatus], probed: Mapping[int, ProbeStatus], static: bool
) -> list[int]:
    """An undecided position in a change's gap; else every side of a change that no
    import has checked; else (static answers, no change, no import yet) the newest."""
    gap = _open_gap(decided)
    if gap is not None:
        return [gap]
    sides = [i for b in boundaries(decided, set(probed)) for i in (b.before, b.after)]
    todo = [i for i in dict.fromkeys(sides) if i not in probed]
    if not todo and static and not probed:
        todo = [n - 1]
    return todo


def sample_positions(n: int, samples: int) -> list[int]:
    """``samples`` interior positions spread evenly between the ends."""
    if n <= 2:
        return []
    k = min(samples, n - 2)
    return sorted({round(j * (n - 1) / (k + 1)) for j in range(1, k + 1)})


def _decided(found: Mapping[int, ProbeStatus]) -> list[int]:
    return sorted(i for i, s in found.items() if s.has_symbol is not None)


def _open_gap(found: Mapping[int, ProbeStatus]) -> int | None:
    """A position not in ``found`` between two decided ones that disagree, nearest the
    middle of their gap; None once every change is pinned to neighbours."""
    decided = _decided(found)
    for a, b in itertools.pairwise(decided):
        if found[a].has_symbol == found[b].has_symbol:
            continue
        open_ = [i for i in range(a + 1, b) if i not in found]
        if open_:
            mid = (a + b) / 2
            return min(open_, key=lambda i: (abs(i - mid), i))
    return None


def boundaries(
    found: Mapping[int, ProbeStatus], probed: set[int] | None = None
) -> tuple[Boundary, ...]:
    """Changes between neighbouring decided positions; ``probed`` (default: all of
    ``found``) are those an import decided."""
    imported = set(found) if probed is None else probed
    decided = _decided(found)
    out = []
    for a, b in itertools.pairwise(decided):
        if found[a].has_symbol != found[b].has_symbol:
            clean = b - a == 1 and a in imported and b in imported
            out.append(Boundary(a, b, bool(found[b].has_symbol), clean))
    return tuple(out)


def infer_rows(
    n: int, found: Mapping[int, ProbeStatus], probed: set[int] | None = None
) -> tuple[Row, ...]:
    """Decided rows as found; an undecided row takes its decided neighbours' verdict when
    both agree, else stays ``not-probed``."""
    imported = set(found) if probed is None else probed
    decided = _decided(found)
    rows = []
    for i in range(n):
        if i in found:
            rows.append(Row(i, found[i], i in imported, i not in imported))
            continue
        left = max((d for d in decided if d < i), default=None)
        right = min((d for d in decided if d > i), default=None)
        status = ProbeStatus.NOT_PROBED
        if left is not None and right is not None:
            ls, rs = found[left], found[right]
            if ls.has_symbol == rs.has_symbol:
                status = ls if ls == rs else ProbeStatus.ABSENT
        rows.append(Row(i, status, False))
    return tuple(rows)


def windows(rows: Sequence[Row]) -> tuple[Window, ...]:
    """Runs of rows with the symbol. Undecided rows inside a run do not break it; the
    window ends at the row right after its last present row, whatever that row is."""
    out: list[Window] = []
    first = last = None
    for row in rows:
        has = row.status.has_symbol
        if has is True:
            if first is None:
                first = row.index
            last = row.index
        elif has is False and first is not None and last is not None:
            out.append(Window(first, last, last + 1))
            first = last = None
    if first is not None and last is not None:
        end = last + 1 if last + 1 < len(rows) else None
        out.append(Window(first, last, end))
    return tuple(out)


def window_specifier(first: Version, end: Version | None) -> str:
    """A window as a version specifier: from its first version up to (not including) the
    first version after it."""
    return f">={first},<{end}" if end is not None else f">={first}"
