"""A comparison as ``--json`` shows it (typed views, dumped by the codec) and as a
Markdown summary (``--md``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from vllmdiag.jobs.compare.tables import ResultTable, label
from vllmdiag.jobs.compare.transfer import Compared, Comparison, Ratio

SCHEMA = 1


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


@dataclass(frozen=True)
class RowView:
    """One (model, workload, leg pair) as ``--json`` shows it; ``a_missing`` /
    ``b_missing`` say why a side has no value."""

    model: str
    workload: str
    comparison: str
    a: float | None
    b: float | None
    factor: float | None
    transfers: bool | None
    agreement: bool
    borderline: bool
    a_missing: str | None = None
    b_missing: str | None = None
    #: Each side's measured noise band for the pair, where it has one.
    a_band: float | None = None
    b_band: float | None = None

    @classmethod
    def of(cls, r: Compared) -> RowView:
        return cls(
            r.model,
            r.workload,
            r.pair.label,
            _r(r.a.value),
            _r(r.b.value),
            _r(r.factor),
            r.transfers,
            r.agreement,
            r.borderline,
            r.a.missing or None,
            r.b.missing or None,
            _r(r.a.band),
            _r(r.b.band),
        )


@dataclass(frozen=True)
class AgreementView(RowView):
    """A row that lands alike on both sides, and the sentence that says so."""

    within_pct: float | None = None
    text: str = ""


@dataclass(frozen=True)
class SideView:
    name: str
    source: str
    table: str
    where: str
    legs: tuple[str, ...]
    rows: int


@dataclass(frozen=True)
class SettingsView:
    factor: float
    noise: float
    agree: float


@dataclass(frozen=True)
class OnlyInView:
    model: str
    workload: str
    where: str


@dataclass(frozen=True)
class NoteView:
    kind: str
    where: str
    message: str


@dataclass(frozen=True)
class CompareReport:
    """What ``vllmdiag compare --json`` prints."""

    schema: int
    sides: dict[str, SideView]
    direction: str
    direction_from: str
    settings: SettingsView
    pairs: tuple[str, ...]
    rows: tuple[RowView, ...]
    differs: tuple[RowView, ...]
    agreements: tuple[AgreementView, ...]
    only_in_a: tuple[OnlyInView, ...]
    only_in_b: tuple[OnlyInView, ...]
    notes: tuple[NoteView, ...]


def _side(t: ResultTable, name: str) -> SideView:
    return SideView(name, t.source, t.title, t.where, tuple(t.legs), len(t.rows))


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


def report(c: Comparison) -> CompareReport:
    """The comparison as ``--json`` shows it (dumped by :mod:`vllmdiag.codec`)."""
    names = c.names
    s = c.settings

    def only(side: str) -> tuple[OnlyInView, ...]:
        return tuple(OnlyInView(o.model, o.workload, o.where) for o in c.only_in if o.side == side)

    return CompareReport(
        schema=SCHEMA,
        sides={"a": _side(c.a, names[0]), "b": _side(c.b, names[1])},
        direction=c.direction,
        direction_from=c.direction_text(),
        settings=SettingsView(s.factor, s.noise, s.agree),
        pairs=tuple(p.label for p in c.pairs),
        rows=tuple(RowView.of(r) for r in c.rows),
        differs=tuple(RowView.of(r) for r in c.differs()),
        agreements=tuple(
            AgreementView(
                **asdict(RowView.of(r)),
                within_pct=_r(r.within_pct),
                text=agreement_text(r, names),
            )
            for r in c.agreements()
        ),
        only_in_a=only("A"),
        only_in_b=only("B"),
        notes=tuple(NoteView(n.kind, n.where, n.message) for n in c.notes),
    )


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
        f"both beyond ±{s.noise:.0%} (or the side's own measured spread, where it has one) "
        f"and within {s.agree:.0%} of each other",
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
