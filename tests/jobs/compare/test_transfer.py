"""The comparison itself, on table models built through the study hook
(``table_from_results``): pairs, direction, the transfer factor, agreements and their
noise band, borderline rows, rows on one side, and the cross-check of printed ratios."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.compare import (
    ResultPoint,
    Settings,
    compare,
    load_table,
    parse_pair,
    table_from_results,
)
from vllmdiag.jobs.compare.tables import Direction, ResultTable

TABLES = FIXTURES / "tables"


def _study(
    rows: dict[tuple[str, str], tuple[float | None, ...]],
    legs: tuple[str, ...] = ("0.18", "0.26", "0.29"),
    direction: Direction = "higher",
    name: str = "study",
) -> ResultTable:
    points = [
        ResultPoint(model, workload, leg, value, None, f"{name}/{model}/{workload}/{leg}")
        for (model, workload), values in rows.items()
        for leg, value in zip(legs, values, strict=True)
    ]
    return table_from_results(points, source=name, title="throughput", direction=direction)


def test_study_hook_builds_the_table_model() -> None:
    points = [
        ResultPoint("m", "w", "vllm-0.26", 200.0, where="cells/2/result.json"),
        ResultPoint("m", "w", "vllm-0.18", 100.0, where="cells/1/result.json"),
        ResultPoint("m", "v", "vllm-0.18", None, "timeout", "cells/3/result.json"),
    ]
    t = table_from_results(
        points, source="runs/s", title="tok/s", direction="higher", legs=["vllm-0.18", "vllm-0.26"]
    )
    assert t.legs == ("vllm-0.18", "vllm-0.26")
    assert [r.key for r in t.rows] == [("m", "w"), ("m", "v")]
    w, v = t.rows
    m = w.measurement("vllm-0.26")
    assert m is not None and m.value is not None and m.value.bounds() == (200.0, 200.0)
    assert w.where == "cells/2/result.json"
    timeout, absent = v.measurements
    assert (timeout.missing, absent.missing) == ("timeout", "no result on that side")
    # Two studies compare like two tables; "26/18" names the legs by their short form.
    other = table_from_results(
        [ResultPoint("m", "w", "vllm-0.18", 50.0), ResultPoint("m", "w", "vllm-0.26", 100.0)],
        source="runs/t",
        title="tok/s",
        direction="higher",
    )
    result = compare(t, other, pairs=[parse_pair("26/18", t, other)])
    (row,) = result.rows
    assert (row.a.value, row.b.value, row.factor, row.transfers) == (2.0, 2.0, 1.0, True)
    assert [o.side for o in result.only_in] == ["A"]


@pytest.mark.parametrize(
    ("points", "message"),
    [
        (
            [ResultPoint("m", "w", "a", 1.0), ResultPoint("m", "w", "a", 2.0, where="x")],
            "two results",
        ),
        ([ResultPoint("m", "w", "a", 0.0, where="x")], "not a positive number"),
        ([ResultPoint("m", "w", "a", float("nan"), where="x")], "not a positive number"),
        ([ResultPoint("m", "w", "z", 1.0, where="x")], "not one of a, b"),
    ],
)
def test_study_hook_refuses_bad_points(points: list[ResultPoint], message: str) -> None:
    with pytest.raises(VllmdiagError, match=message) as exc:
        table_from_results(points, source="s", title="t", direction="higher", legs=["a", "b"])
    assert exc.value.where == "x"


def test_factor_threshold_and_order_of_differences() -> None:
    a = _study(
        {("m1", "w"): (100, 125, 125), ("m2", "w"): (100, 300, 300), ("m3", "w"): (100, 100, 100)}
    )
    b = _study(
        {("m1", "w"): (100, 100, 100), ("m2", "w"): (100, 100, 100), ("m3", "w"): (100, 160, 160)}
    )
    result = compare(a, b)
    first = {r.model: r for r in result.rows if r.pair.label == "0.26/0.18"}
    assert first["m1"].factor == pytest.approx(1.25) and first["m1"].transfers is True  # not more
    assert first["m2"].transfers is False and first["m3"].transfers is False
    # Differences come as A's speedup, largest first: A's wins, then B's.
    assert [r.model for r in result.differs()] == ["m2", "m3"]
    stricter = compare(a, b, settings=Settings(factor=1.2, agree=0.05))
    assert [r.model for r in stricter.differs()] == ["m2", "m1", "m3"]


def test_lower_is_better_speedup_is_old_over_new() -> None:
    a = _study({("m", "w"): (5.0, 4.0, 4.0)}, direction="lower")
    b = _study({("m", "w"): (5.0, 2.5, 2.5)}, direction="lower")
    result = compare(a, b)
    row = result.rows[0]
    assert (row.a.value, row.b.value) == (1.25, 2.0)
    assert result.direction == "lower"
    forced = compare(a, b, direction="higher")
    assert forced.rows[0].a.value == 0.8 and forced.direction_from == "--higher-is-better"


def test_agreement_needs_a_change_beyond_noise_on_both_sides_within_tolerance() -> None:
    rows_a = {
        ("regress", "w"): (100.0, 70.0, 70.0),  # 0.70 vs 0.71: agreement
        ("apart", "w"): (100.0, 70.0, 70.0),  # 0.70 vs 0.75: 7 % apart
        ("flat", "w"): (100.0, 97.0, 97.0),  # 0.97 vs 0.97: inside the noise band
        ("opposite", "w"): (100.0, 120.0, 120.0),
        ("up", "w"): (100.0, 120.0, 120.0),  # 1.20 vs 1.16: agreement, an improvement
    }
    rows_b = {
        ("regress", "w"): (100.0, 71.0, 71.0),
        ("apart", "w"): (100.0, 75.0, 75.0),
        ("flat", "w"): (100.0, 97.0, 97.0),
        ("opposite", "w"): (100.0, 80.0, 80.0),
        ("up", "w"): (100.0, 116.0, 116.0),
    }
    result = compare(_study(rows_a), _study(rows_b), pairs=None)
    agreed = [(r.model, r.pair.label) for r in result.agreements()]
    assert agreed == [("regress", "0.26/0.18"), ("up", "0.26/0.18")]
    wide = compare(_study(rows_a), _study(rows_b), settings=Settings(agree=0.08))
    assert ("apart", "0.26/0.18") in [(r.model, r.pair.label) for r in wide.agreements()]
    no_noise = compare(_study(rows_a), _study(rows_b), settings=Settings(noise=0.0))
    assert ("flat", "0.29/0.26") in [(r.model, r.pair.label) for r in no_noise.agreements()]


def test_rounded_values_make_rows_borderline_and_keep_agreements_honest(tmp_path: Path) -> None:
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    head = "## Latency (ms/tok)\n\n| model | 0.26 | 0.29 |\n|---|---|---|\n"
    a.write_text(head + "| x | 0.36 | 0.30 |\n| y | 0.24 | 0.22 |\n")
    b.write_text(head + "| x | 0.35 | 0.32 |\n| y | 0.35 | 0.32 |\n")
    result = compare(load_table(a), load_table(b))
    x, y = result.rows
    # x: 0.36/0.30 = 1.2 vs 0.35/0.32 = 1.094 (speedups, old/new): factor 1.10, and the
    # rounding allows no more than 1.17
    assert x.transfers is True and x.borderline is False
    # y: 1.091 vs 1.094 would agree, but 0.24/0.22 may be as little as 1.044: within noise
    assert y.agreement is False and y.a.low is not None and y.a.low < 1.05
    c = tmp_path / "c.md"
    c.write_text(head + "| x | 0.36 | 0.26 |\n| y | 0.24 | 0.22 |\n")
    # 1.385/1.094 = 1.27, but the rounding allows as little as 1.19
    edge = compare(load_table(c), load_table(b)).rows[0]
    assert edge.transfers is False and edge.borderline is True


def test_a_transcription_error_in_a_printed_ratio_is_reported(tmp_path: Path) -> None:
    text = (TABLES / "h200.tsv").read_text(encoding="utf-8")
    line = "gpt-oss-120b\t2\tmixed\t11,290\t11,635\t11,698\t1.03x\t1.01x"
    assert line in text
    lineno = text.splitlines().index(line) + 1
    wrong = tmp_path / "h200.tsv"
    wrong.write_text(text.replace(line, line.replace("1.03x", "1.30x")), encoding="utf-8")
    result = compare(load_table(TABLES / "b200.md"), load_table(wrong))
    (note,) = result.notes
    assert note.kind == "cross-check" and note.where == f"{wrong}:{lineno}:43"
    assert note.message == (
        "B: gpt-oss-120b / mixed, column '26/18' prints 1.30x, but 0.26 = 11,635 and "
        "0.18 = 11,290 give a ratio of 1.031 (1.03–1.031 allowing for their rounding)"
    )
    # The comparison still uses the values, not the printed ratio.
    row = next(
        r
        for r in result.rows
        if (r.model, r.workload, r.pair.label) == ("gpt-oss-120b", "mixed", "0.26/0.18")
    )
    assert row.b.value == pytest.approx(11635 / 11290)


def test_printed_ratio_without_values_and_values_without_ratio(tmp_path: Path) -> None:
    path = tmp_path / "t.md"
    path.write_text(
        "| model | 0.18 | 0.26 | 26/18 |\n|---|---|---|---|\n"
        "| a | — | 10 | 1.10x |\n| b | 10 | 11 | — |\n| c | 10 | 11 | 1.10x |\n"
    )
    notes = [n.message for n in compare(load_table(path), load_table(path)).notes]
    assert notes == [
        "A: a, column '26/18' prints 1.10x though 0.18 has no value (—)",
        "A: b, column '26/18' prints no ratio (—) though 0.18 and 0.26 both have values",
    ] + [m.replace("A:", "B:", 1) for m in notes[:2]]


def test_context_columns_that_differ_and_legs_on_one_side(tmp_path: Path) -> None:
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("model\ttp\tworkload\t0.18\t0.26\t0.29\nm\t2\tw\t1\t2\t3\n")
    b.write_text("model\ttp\tworkload\t0.18\t0.26\nm\t4\tw\t1\t2\n")
    result = compare(load_table(a), load_table(b))
    assert [p.label for p in result.pairs] == ["0.26/0.18"]
    kinds = {n.kind: n for n in result.notes}
    assert kinds["context"].message == f"m / w: 'tp' is 2 in A ({a}:2) and 4 in B"
    assert kinds["leg"].message == "legs only in A: 0.29 (not compared)"


def test_bad_pairs_directions_and_settings() -> None:
    a = _study({("m", "w"): (1.0, 2.0, 3.0)})
    b = _study({("m", "w"): (1.0, 2.0, 3.0)})
    assert parse_pair("0.18->0.29", a, b).label == "0.29/0.18"
    assert parse_pair("0.29/0.18", a, b).label == "0.29/0.18"
    with pytest.raises(VllmdiagError, match=r"'0\.30' is not a leg of both tables"):
        parse_pair("0.30/0.18", a, b)
    with pytest.raises(VllmdiagError, match="is not NEW/OLD"):
        parse_pair("0.29", a, b)
    with pytest.raises(VllmdiagError, match="with itself"):
        parse_pair("29/0.29", a, b)
    lat = _study({("m", "w"): (1.0, 2.0, 3.0)}, direction="lower")
    with pytest.raises(VllmdiagError, match=r"higher-is-better table .* lower-is-better"):
        compare(a, lat)
    assert compare(a, lat, direction="lower").direction == "lower"
    apart = _study({("m", "w"): (1.0, 2.0)}, legs=("1.0", "2.0"))
    with pytest.raises(VllmdiagError, match="share 0 leg"):
        compare(a, apart)
    for bad in (Settings(factor=1.0), Settings(noise=-0.1), Settings(factor=1.1, agree=0.2)):
        with pytest.raises(VllmdiagError):
            compare(a, b, settings=bad)
