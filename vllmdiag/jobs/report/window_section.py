"""The dependency window: which published versions have the symbol and which do not
(runs of versions, how each was decided), what the consumer declares, which of the
versions it admits lack the symbol, what a fresh resolve picks, and the bound to add."""

from __future__ import annotations

from itertools import groupby

from vllmdiag.jobs.report import md
from vllmdiag.jobs.window import ConsumerReport, DecidedBy, VersionRow, WindowResult


def section(window: WindowResult, consumer: ConsumerReport | None) -> str:
    sym = md.code(window.symbol)
    out = [
        f"{md.plural(len(window.versions), 'published version')} of {md.code(window.package)} "
        f"checked for {sym} (Python {window.python}, {md.code(window.index_url)}): each "
        "change confirmed by a real install and import, the rest read from the wheels' sources.",
        "",
        md.table(["versions", window.symbol, "decided by"], _runs(window.versions)),
    ]
    if window.window:
        out += ["", f"Versions with the symbol: {md.code(window.window)}."]
    consumers = [consumer] if consumer is not None else list(window.consumers)
    for c in consumers:
        out += ["", *_consumer(window, c)]
    if window.notes:
        out += ["", *(f"Note: {n}" for n in window.notes)]
    return "\n".join(out)


def _runs(rows: tuple[VersionRow, ...]) -> list[list[str]]:
    out = []
    for status, group in groupby(rows, key=lambda r: r.status):
        members = list(group)
        versions = [r.version for r in members]
        how = _decided([r.decided_by for r in members])
        label = md.span(versions) + (f" ({len(versions)})" if len(versions) > 1 else "")
        out.append([md.cell(label), status.value, how])
    return out


def _decided(decided: list[DecidedBy | None]) -> str:
    names = {
        DecidedBy.IMPORT: "imported",
        DecidedBy.STATIC: "read from the wheels",
        DecidedBy.INFERRED: "inferred",
    }
    counts = {k: sum(d is k for d in decided) for k in names}
    parts = [f"{n} {names[k]}" for k, n in counts.items() if n]
    undecided = sum(d is None for d in decided)
    if undecided:
        parts.append(f"{undecided} undecided")
    return ", ".join(parts)


def _consumer(window: WindowResult, c: ConsumerReport) -> list[str]:
    pkg = window.package
    declared = f"{pkg}{c.declared}" if c.declared else f"{pkg} (no range: any version)"
    lines = [f"- {md.code(c.requirement)} declares {md.code(declared)}."]
    lines.append(
        f"  It admits {md.plural(len(c.admitted_with_symbol), 'version')} with the symbol "
        f"({md.span(c.admitted_with_symbol)}) and "
        f"{md.plural(len(c.admitted_without_symbol), 'version')} without it "
        f"({md.span(c.admitted_without_symbol)})"
        + (
            f", {len(c.admitted_undecided)} undecided ({md.span(c.admitted_undecided)})."
            if c.admitted_undecided
            else "."
        )
    )
    if c.resolves_to:
        lacks = " (without the symbol)" if c.resolves_to in c.admitted_without_symbol else ""
        picks = f"{pkg} {c.resolves_to}{lacks}"
        lines.append(f"- A fresh resolve of {md.code(c.requirement)} picks {picks}.")
    if c.resolves_to_as_of:
        lines.append(f"  As of the run's date it picked {c.resolves_to_as_of}.")
    if c.resolve_error:
        lines.append(f"- The resolve failed: {md.code(c.resolve_error)}.")
    if c.constrained_by:
        who = "; ".join(str(x) for x in c.constrained_by)
        lines.append(f"- In that resolve: {who}.")
    if c.suggested_specifier:
        newest = c.admitted_with_symbol[-1] if c.admitted_with_symbol else None
        lines.append(
            f"- Suggested bound: {md.code(pkg + c.suggested_specifier)}"
            + (f" ({newest} is the newest version with the symbol in it)." if newest else ".")
        )
    lines.append(f"- {c.verdict}")
    return lines
