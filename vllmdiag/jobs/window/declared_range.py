"""The one-sentence verdict on a consumer's declared range, and the bound to suggest
upstream. Pure: versions are already classified (present / absent / undecided)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from vllmdiag.jobs.window.probe_result import ProbeStatus


@dataclass(frozen=True)
class Assessment:
    """Which versions the declared range admits, by what they have; the bound to add
    upstream (where one helps) and the one-sentence verdict."""

    admitted_with_symbol: tuple[str, ...]
    admitted_without_symbol: tuple[str, ...]
    admitted_undecided: tuple[str, ...]
    suggested_bound: str | None  # e.g. "<4.6.0" (what to add)
    suggested_specifier: str | None  # e.g. ">=4.4.0.dev1,<4.6.0"
    verdict: str


def assess(
    *,
    consumer: str,
    package: str,
    symbol: str,
    declared: str | None,
    rows: Sequence[tuple[Version, ProbeStatus]],
    resolves_to: str | None,
    as_of: tuple[str, str] | None = None,
) -> Assessment:
    """``rows``: every version of the table (sorted) with its status, probed or inferred."""
    spec = SpecifierSet(declared or "")
    admitted = [(v, s) for v, s in rows if spec.contains(v, prereleases=True)]
    with_ = tuple(str(v) for v, s in admitted if s.has_symbol is True)
    without = tuple(str(v) for v, s in admitted if s.has_symbol is False)
    unknown = tuple(str(v) for v, s in admitted if s.has_symbol is None)
    bound = _bound(rows, admitted)
    suggested = _join(declared, bound) if bound else None
    decl = f"{package}{declared}" if declared else f"{package} (no constraint)"
    if declared is None:
        head = f"{consumer} does not itself require {package}"
    else:
        head = f"{consumer} declares {decl}"
    states = {str(v): s for v, s in rows}

    def lacks(version: str) -> str:
        state = states.get(version)
        return ", which lacks it" if state is not None and state.has_symbol is False else ""

    picked = ""
    if resolves_to is not None:
        picked = f"; a fresh resolve picks {resolves_to}{lacks(resolves_to)}"
    if as_of is not None:
        picked += f" (as of {as_of[0]}: {as_of[1]}{lacks(as_of[1])})"
    if not admitted:
        sentence = f"{head}, which admits none of the versions examined{picked}."
    elif not with_:
        sentence = (
            f"{head}, and no version it admits has {symbol}: {consumer} cannot work under "
            f"its own constraints{picked}."
        )
    elif not without:
        sentence = f"{head}; every version it admits has {symbol}{picked}. Nothing to fix."
    else:
        sentence = (
            f"{head}, which admits {len(without)} version(s) without {symbol} "
            f"({_span(without)}){picked}. Suggest upstream: {package}{suggested}."
        )
    return Assessment(with_, without, unknown, bound, suggested, sentence)


def _bound(
    rows: Sequence[tuple[Version, ProbeStatus]], admitted: Sequence[tuple[Version, ProbeStatus]]
) -> str | None:
    """The bounds that cut the admitted range down to the newest run of versions that
    have the symbol: ``<`` the version after it, ``>=`` its first where older admitted
    versions lack it."""
    ok = [v for v, s in admitted if s.has_symbol is True]
    if not ok:
        return None
    newest_ok = ok[-1]
    order = [v for v, _ in rows]
    pos = order.index(newest_ok)
    parts = []
    start = pos
    while start > 0 and rows[start - 1][1].has_symbol is not False:
        start -= 1
    while rows[start][1].has_symbol is not True:
        start += 1
    first = rows[start][0]
    if any(s.has_symbol is False and v < first for v, s in admitted):
        parts.append(f">={first}")
    end = pos + 1
    if any(v > newest_ok and s.has_symbol is not True for v, s in admitted) and end < len(rows):
        parts.append(f"<{rows[end][0]}")
    return ",".join(parts) or None


def _join(declared: str | None, bound: str) -> str:
    return ",".join(p for p in (declared, bound) if p)


def _span(versions: Sequence[str]) -> str:
    if len(versions) <= 3:
        return ", ".join(versions)
    return f"{versions[0]} … {versions[-1]}"


def conflicting(
    constraints: Sequence[tuple[str, str]], rows: Sequence[tuple[Version, ProbeStatus]]
) -> list[str]:
    """Of ``(who, specifier)`` pairs from the resolve, those that admit no version with
    the symbol: a bound upstream would force the resolver to move them too."""
    out = []
    for who, spec_text in constraints:
        spec = SpecifierSet(spec_text)
        if not any(spec.contains(v, prereleases=True) and s.has_symbol for v, s in rows):
            out.append(f"{who} requires {spec_text or '(any)'}, which admits no version with it")
    return out
