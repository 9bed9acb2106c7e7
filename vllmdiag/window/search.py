"""Where a symbol appears and disappears across an ordered list of versions.

Pure: the caller supplies an oracle that probes a batch of positions (so it may probe
them in parallel) and returns a :class:`Status` for each. The search assumes presence
changes at most twice (the symbol appears, later disappears), so it

1. probes both ends and a few interior samples (a window that opens and closes between
   the ends shows up in a sample),
2. binary-searches every change between two neighbouring decided probes, stepping
   around versions whose probe cannot decide (install failures, import errors: skips),
3. checks that each boundary has import probes on both sides of it,

and infers the rest. ``scan`` probes every position instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from vllmdiag.window.model import Status

Oracle = Callable[[Sequence[int]], Mapping[int, Status]]


@dataclass(frozen=True)
class Row:
    index: int
    status: Status
    probed: bool


@dataclass(frozen=True)
class Boundary:
    """A change between the decided probe at ``before`` and the one at ``after``.

    ``appears`` is True where the symbol is present from ``after`` on. ``verified``: both
    sides were import-probed and nothing undecided lies between them.
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


def search(
    n: int,
    oracle: Oracle,
    *,
    samples: int = 3,
    scan: bool = False,
    hints: Sequence[bool | None] | None = None,
) -> SearchResult:
    """Decide presence for positions ``0 .. n-1`` with as few oracle calls as it can.

    ``hints`` (static guesses, None where unknown) replace the interior samples when they
    cover at least half the positions: the first batch is then the ends and both sides
    of every change the hints predict. Wrong hints cost probes, never correctness of a
    boundary found, since only probes decide."""
    found: dict[int, Status] = {}

    def ask(positions: Sequence[int]) -> None:
        new = [i for i in dict.fromkeys(positions) if 0 <= i < n and i not in found]
        if new:
            answer = oracle(new)
            for i in new:
                found[i] = answer.get(i, Status.NOT_PROBED)

    if n == 0:
        return SearchResult((), (), (), 0)
    if scan:
        ask(range(n))
    else:
        ask([0, n - 1, *first_probes(n, samples, hints)])
        while True:
            gap = _open_gap(n, found)
            if gap is None:
                break
            ask([gap])
        ask(_unverified_sides(found))
    rows = infer_rows(n, found)
    return SearchResult(rows, boundaries(found), windows(rows), len(found))


def first_probes(n: int, samples: int, hints: Sequence[bool | None] | None) -> list[int]:
    """The interior positions of the first batch: hinted change sides, else samples."""
    if hints is None or len(hints) != n or sum(h is not None for h in hints) * 2 < n:
        return sample_positions(n, samples)
    known = [(i, h) for i, h in enumerate(hints) if h is not None]
    out: list[int] = []
    for (a, ha), (b, hb) in itertools.pairwise(known):
        if ha != hb:
            out += [a, b]
    return out


def sample_positions(n: int, samples: int) -> list[int]:
    """``samples`` interior positions spread evenly between the ends."""
    if n <= 2:
        return []
    k = min(samples, n - 2)
    return sorted({round(j * (n - 1) / (k + 1)) for j in range(1, k + 1)})


def _decided(found: Mapping[int, Status]) -> list[int]:
    return sorted(i for i, s in found.items() if s.has_symbol is not None)


def _open_gap(n: int, found: Mapping[int, Status]) -> int | None:
    """An unprobed position between two decided probes that disagree, nearest the
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


def _unverified_sides(found: Mapping[int, Status]) -> list[int]:
    """Positions next to a boundary that are not yet probed (normally none: the binary
    search ends on probed neighbours; this guards the invariant)."""
    out: list[int] = []
    for b in boundaries(found):
        out += [i for i in (b.before, b.after) if i not in found]
    return out


def boundaries(found: Mapping[int, Status]) -> tuple[Boundary, ...]:
    decided = _decided(found)
    out = []
    for a, b in itertools.pairwise(decided):
        if found[a].has_symbol != found[b].has_symbol:
            clean = all(i in found for i in range(a + 1, b)) and b - a == 1
            out.append(Boundary(a, b, bool(found[b].has_symbol), clean))
    return tuple(out)


def infer_rows(n: int, found: Mapping[int, Status]) -> tuple[Row, ...]:
    """Probed rows as found; an unprobed row takes its decided neighbours' verdict when
    both agree, else stays ``not-probed``."""
    decided = _decided(found)
    rows = []
    for i in range(n):
        if i in found:
            rows.append(Row(i, found[i], True))
            continue
        left = max((d for d in decided if d < i), default=None)
        right = min((d for d in decided if d > i), default=None)
        status = Status.NOT_PROBED
        if left is not None and right is not None:
            ls, rs = found[left], found[right]
            if ls.has_symbol == rs.has_symbol:
                status = ls if ls == rs else Status.ABSENT
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
