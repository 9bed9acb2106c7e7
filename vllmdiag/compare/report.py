"""A comparison as JSON (``--json``) and as a Markdown summary (``--md``)."""

from __future__ import annotations

from typing import Any

from vllmdiag.compare.model import ResultTable, label
from vllmdiag.compare.transfer import Compared, Comparison, Ratio

SCHEMA = 1


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def row_json(r: Compared) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": r.model,
        "workload": r.workload,
        "comparison": r.pair.label,
        "a": _r(r.a.value),
        "b": _r(r.b.value),
        "factor": _r(r.factor),
        "transfers": r.transfers,
        "agreement": r.agreement,
        "borderline": r.borderline,
    }
    if r.a.missing:
        out["a_missing"] = r.a.missing
    if r.b.missing:
        out["b_missing"] = r.b.missing
    return out


def _side(t: ResultTable, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "source": t.source,
        "table": t.title,
        "where": t.where,
        "legs": list(t.legs),
        "rows": len(t.rows),
    }


def agreement_text(r: Compared, names: tuple[str, str]) -> str:
    """The agreement as a sentence: "... lands within N % on both sides: a version
    effect, not a hardware artefact"."""
    way = "a regression" if (r.a.value or 0) < 1 else "an improvement"
    return (
        f"{label(r.model, r.workload)} {r.pair.label}: {ratio_text(r.a)} on {names[0]}, "
        f"{ratio_text(r.b)} on {names[1]}: {way} that lands within "
        f"{r.within_pct or 0:.1f} % on both sides: a version effect, not a hardware artefact"
    )


def ratio_text(ratio: Ratio) -> str:
    """``1.53x``, or ``—`` where the side has no value."""
    return "—" if ratio.value is None else f"{ratio.value:.2f}x"


def to_json(c: Comparison) -> dict[str, Any]:
    names = c.names
    s = c.settings
    return {
        "schema": SCHEMA,
        "sides": {"a": _side(c.a, names[0]), "b": _side(c.b, names[1])},
        "direction": c.direction,
        "direction_from": c.direction_text(),
        "settings": {"factor": s.factor, "noise": s.noise, "agree": s.agree},
        "pairs": [p.label for p in c.pairs],
        "rows": [row_json(r) for r in c.rows],
        "differs": [row_json(r) for r in c.differs()],
        "agreements": [
            {**row_json(r), "within_pct": _r(r.within_pct), "text": agreement_text(r, names)}
            for r in c.agreements()
        ],
        "only_in_a": [
            {"model": o.model, "workload": o.workload, "where": o.where}
            for o in c.only_in
            if o.side == "A"
        ],
        "only_in_b": [
            {"model": o.model, "workload": o.workload, "where": o.where}
            for o in c.only_in
            if o.side == "B"
        ],
        "notes": [{"kind": n.kind, "where": n.where, "message": n.message} for n in c.notes],
    }


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_md(h) for h in head) + " |", "|" + " --- |" * len(head)]
    out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def to_markdown(c: Comparison) -> str:
    names = c.names
    a, b = names
    s = c.settings
    lines = [
        f"# What transfers: {_md(a)} vs {_md(b)}",
        "",
        f'- {_md(a)}: `{_md(c.a.source)}`, table "{_md(c.a.title)}" ({len(c.a.rows)} rows)',
        f'- {_md(b)}: `{_md(c.b.source)}`, table "{_md(c.b.title)}" ({len(c.b.rows)} rows)',
        f"- {c.direction} is better ({_md(c.direction_text())}); speedups NEW/OLD "
        "above 1 mean NEW is better",
        f"- does not transfer: the two speedups differ by more than {s.factor:g}x; agreement: "
        f"both beyond ±{s.noise:.0%} and within {s.agree:.0%} of each other",
        "",
        f"## Speedups that differ by more than {s.factor:g}x",
        "",
    ]
    differs = c.differs()
    if differs:
        head = ["model / workload", "comparison", a, b, "factor"]
        lines += _md_table(
            head,
            [
                [
                    f"{r.model} {r.workload}".strip(),
                    r.pair.label,
                    ratio_text(r.a),
                    ratio_text(r.b),
                    f"{r.factor:.2f}x",
                ]
                for r in differs
                if r.factor is not None
            ],
        )
    else:
        lines += ["None: every row both sides measured transfers.", ""]
    lines += ["## Agreements", ""]
    agreements = c.agreements()
    lines += [f"- {_md(agreement_text(r, names))}" for r in agreements] or ["None."]
    lines.append("")
    for pair in c.pairs:
        lines += [f"## {pair.label}", ""]
        rows = [r for r in c.rows if r.pair == pair]
        lines += _md_table(
            ["model", "workload", a, b, "factor", "transfers"],
            [
                [
                    r.model,
                    r.workload,
                    ratio_text(r.a) if r.a.value is not None else f"— ({r.a.missing})",
                    ratio_text(r.b) if r.b.value is not None else f"— ({r.b.missing})",
                    "—" if r.factor is None else f"{r.factor:.2f}x",
                    {True: "yes", False: "no", None: "—"}[r.transfers],
                ]
                for r in rows
            ],
        )
    if c.only_in:
        lines += ["## Rows on one side only", ""]
        lines += [
            f"- only in {_md(a if o.side == 'A' else b)}: {_md(label(o.model, o.workload))} "
            f"(`{_md(o.where)}`)"
            for o in c.only_in
        ]
        lines.append("")
    if c.notes:
        lines += ["## Notes", ""]
        lines += [f"- {_md(n.message)} (`{_md(n.where)}`)" for n in c.notes]
        lines.append("")
    return "\n".join(lines)
