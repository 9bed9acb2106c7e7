"""Reading results tables as people publish them: Markdown reports with several tables,
TSV reports with plain headings, CSV; numbers with separators and suffixes; and a clear
error at file:line:col for every kind of bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.compare import load_table
from vllmdiag.jobs.compare.cells import clean, parse_number
from vllmdiag.jobs.compare.columns import direction_of
from vllmdiag.jobs.compare.grids import delimited_tables, markdown_tables
from vllmdiag.jobs.compare.tables import MISSING, Number
from vllmdiag.model.leg_names import leg_aliases

TABLES = FIXTURES / "tables"


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("12,779", Number(12779.0, 0)),
        ("1,234,567.5", Number(1234567.5, 1)),
        ("1.01x", Number(1.01, 2)),
        ("3.31×", Number(3.31, 2)),
        ("0.24", Number(0.24, 2)),
        ("**7,457**", Number(7457.0, 0)),
        ("`300`", Number(300.0, 0)),
        ("117", Number(117.0, 0)),
    ],
)
def test_numbers_as_printed(text: str, number: Number) -> None:
    assert parse_number(text).number == number


@pytest.mark.parametrize("text", ["—", "–", "-", "", "n/a", "N/A", " — "])
def test_no_value_markers(text: str) -> None:
    got = parse_number(text)
    assert got.number is None and got.missing == MISSING


def test_outcome_words_are_missing_with_their_reason() -> None:
    assert parse_number("FAIL").missing == "FAIL on that side"
    assert parse_number("OOM").missing == "OOM on that side"


@pytest.mark.parametrize("text", ["abc", "1,23", "12 779", "1.2.3", "~300", "1e3", "x"])
def test_not_numbers(text: str) -> None:
    got = parse_number(text)
    assert got.number is None and got.missing is None


def test_rounding_bounds() -> None:
    assert Number(0.24, 2).bounds() == pytest.approx((0.235, 0.245))
    assert Number(117.0, 0).bounds() == (116.5, 117.5)
    assert Number(6539.0).bounds() == (6539.0, 6539.0)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("`Llama-3.1-8B-Instruct`", "Llama-3.1-8B-Instruct"),
        ("**gpt-oss-120b**", "gpt-oss-120b"),
        ("[Qwen2-VL](https://example.org/q)", "Qwen2-VL"),
        ("Qwen2_5_VL", "Qwen2_5_VL"),
        ("*emph*", "emph"),
        ("a \\| b", "a | b"),
        ("<b>x</b>  y", "x y"),
    ],
)
def test_markup_is_stripped_not_names(raw: str, text: str) -> None:
    assert clean(raw) == text


def test_markdown_report_tables_with_positions() -> None:
    doc = (
        "# Report\n"
        "\n"
        "| path | what |\n"
        "| --- | --- |\n"
        "| `a\\|b` | x |\n"
        "\n"
        "```\n"
        "| model | 0.18 |\n"
        "| --- | --- |\n"
        "```\n"
        "### Throughput (tok/s)\n"
        "Some prose.\n"
        "| model | 0.18 | 0.26 |\n"
        "|:---|---:|---:|\n"
        "| `m|code` | 1,000 | — |\n"
    )
    tables = markdown_tables("r.md", doc)
    assert [(t.title, t.line) for t in tables] == [("Report", 3), ("Throughput (tok/s)", 13)]
    assert [c.text for c in tables[0].rows[0]] == ["`a\\|b`", "x"]
    row = tables[1].rows[0]
    assert [(c.text, c.line, c.col) for c in row] == [
        ("`m|code`", 15, 3),
        ("1,000", 15, 14),
        ("—", 15, 22),
    ]
    assert "Some prose." in tables[1].caption


def test_tsv_report_blocks_take_their_heading() -> None:
    tables = delimited_tables(
        str(TABLES / "h200.tsv"), (TABLES / "h200.tsv").read_text(), "\t", "h"
    )
    titles = [t.title for t in tables]
    assert titles == [
        "Throughput (tok/s, higher is better)",
        "Latency (ms/tok, lower is better)",
        "What transfers from B200, and what does not",
        "The Qwen3-VL-235B-FP8 regression reproduces to within 1%",
    ]
    assert tables[0].line == 3 and len(tables[0].rows) == 32
    cell = tables[0].rows[0][4]
    assert (cell.text, cell.line, cell.col) == ("12,931", 4, 38)


def test_csv_quoting_and_positions(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text('model,workload,0.18,0.26\n"Llama, 8B",mixed,"12,779","12,931"\n')
    table = load_table(path)
    row = table.rows[0]
    assert row.key == ("Llama, 8B", "mixed")
    m = row.measurement("0.26")
    assert m is not None and m.value == Number(12931.0, 0) and m.where == f"{path}:2:28"
    bad = tmp_path / "bad.csv"
    bad.write_text('model,0.18,0.26\n"open,1,2\n')
    with pytest.raises(VllmdiagError, match="unterminated quoted field") as exc:
        load_table(bad)
    assert exc.value.where == f"{bad}:2:1"


def test_table_picked_by_heading_and_format_sniffed(tmp_path: Path) -> None:
    latency = load_table(TABLES / "b200.md", "LATENCY")
    assert latency.title == "Latency (ms/tok, lower is better)" and latency.direction == "lower"
    copy = tmp_path / "report.txt"
    copy.write_text((TABLES / "h200.tsv").read_text())
    assert load_table(copy).title == "Throughput (tok/s, higher is better)"


def test_headers_ratio_columns_and_units(tmp_path: Path) -> None:
    path = tmp_path / "t.md"
    path.write_text(
        "## Decode\n\n"
        "| Model | Scenario | v0.18.0 (ms) | v0.26.0 (ms) | 18→26 | tp |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| m | w | 5.10 | 3.97 | 1.28x | 2 |\n"
    )
    t = load_table(path)
    assert t.legs == ("v0.18.0", "v0.26.0")
    assert t.direction == "lower" and "ms" in t.direction_from
    (p,) = t.rows[0].printed
    assert (p.new, p.old, p.speedup) == ("v0.26.0", "v0.18.0", True)
    assert t.rows[0].extras == (("tp", "2"),)
    assert {"0.18", "18", "18.0"} <= leg_aliases("v0.18.0")


def test_direction_words() -> None:
    assert direction_of("Throughput (tok/s, higher is better)")[0] == "higher"
    assert direction_of("Latency (ms/tok, lower is better)")[0] == "lower"
    assert direction_of("TTFT p50")[0] == "lower"
    assert direction_of("output tokens/s")[0] == "higher"
    assert direction_of("results")[0] is None


def _error(tmp_path: Path, name: str, text: str, table: str | None = None) -> VllmdiagError:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(VllmdiagError) as exc:
        load_table(path, table)
    return exc.value


def test_non_number_cell_points_at_it(tmp_path: Path) -> None:
    err = _error(tmp_path, "t.tsv", "model\tworkload\t0.18\t0.26\nm\tw\t1,000\tfast\n")
    assert err.where == f"{tmp_path / 't.tsv'}:2:11"
    assert "not a number in column '0.26': 'fast'" in err.message
    assert err.hint and "—" in err.hint


def test_duplicated_row_names_both_lines(tmp_path: Path) -> None:
    err = _error(
        tmp_path,
        "t.md",
        "| model | workload | 0.18 | 0.26 |\n|---|---|---|---|\n"
        "| `m` | w | 1 | 2 |\n| m | x | 1 | 2 |\n| **m** | w | 3 | 4 |\n",
    )
    assert err.where == f"{tmp_path / 't.md'}:5"
    assert "duplicated row m / w: also on line 3" in err.message


def test_no_table_and_no_leg_columns(tmp_path: Path) -> None:
    err = _error(tmp_path, "empty.md", "# nothing here\n\njust prose\n")
    assert err.message == "no table found"
    err = _error(
        tmp_path,
        "noleg.md",
        "## Coverage\n\n| leg | passing |\n| --- | --- |\n| 0.18.0 | 13/15 |\n",
    )
    assert "no table has a model column and leg columns" in err.message
    assert err.where == f"{tmp_path / 'noleg.md'}:3"
    assert err.hint and "'Coverage' (line 3)" in err.hint
    err = _error(tmp_path, "r.tsv", (TABLES / "h200.tsv").read_text(), "prefill")
    assert err.message == "no table's heading contains 'prefill'"
    assert err.hint and "'Latency (ms/tok, lower is better)' (line 39)" in err.hint
    err = _error(tmp_path, "r2.tsv", (TABLES / "h200.tsv").read_text(), "What transfers")
    assert "no table under 'What transfers'" in err.message


def test_row_width_empty_model_negative_and_twice_named_leg(tmp_path: Path) -> None:
    head = "| model | 0.18 | 0.26 |\n|---|---|---|\n"
    assert (
        "row has 2 cells, the header has 3"
        in _error(tmp_path, "a.md", head + "| m | 1 |\n").message
    )
    assert _error(tmp_path, "b.md", head + "|  | 1 | 2 |\n").message == "empty model cell"
    err = _error(tmp_path, "c.md", head + "| m | 0 | 2 |\n")
    assert "must be positive" in err.message and err.where == f"{tmp_path / 'c.md'}:3:7"
    err = _error(tmp_path, "d.md", "| model | 0.18 | 0.18 |\n|---|---|---|\n| m | 1 | 2 |\n")
    assert "leg column '0.18' appears twice" in err.message


def test_paths_that_are_not_tables(tmp_path: Path) -> None:
    with pytest.raises(VllmdiagError, match="no such file"):
        load_table(tmp_path / "missing.md")
    with pytest.raises(VllmdiagError, match="is a directory"):
        load_table(tmp_path)
    binary = tmp_path / "t.tsv"
    binary.write_bytes(b"model\t0.18\n\xff\xfe\t1\n")
    with pytest.raises(VllmdiagError, match="not UTF-8"):
        load_table(binary)
    with pytest.raises(VllmdiagError, match="cannot tell the format"):
        _error(tmp_path, "plain.txt", "just words\n")
        load_table(tmp_path / "plain.txt")


def test_csv_with_a_heading_and_a_rule_that_is_not_a_table(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("Latency (ms/tok)\n\nmodel,0.18,0.26\nm,5.10,5.02\n")
    t = load_table(path)
    assert t.title == "Latency (ms/tok)" and t.direction == "lower" and t.where == f"{path}:3"
    md = markdown_tables("x.md", "a | b\n---\n\n| model | 0.18 |\n|-|-|\n| m | 1 |\n")
    assert [(t.line, [c.text for c in t.header]) for t in md] == [(4, ["model", "0.18"])]


def test_a_heading_match_wins_over_prose_that_mentions_it(tmp_path: Path) -> None:
    path = tmp_path / "r.md"
    path.write_text(
        "## About\n\nThe runtime stacks and latency are below.\n\n"
        "| model | 0.18 | 0.26 |\n|---|---|---|\n| a | 1 | 2 |\n\n"
        "## Latency (ms/tok)\n\n| model | 0.18 | 0.26 |\n|---|---|---|\n| b | 1 | 2 |\n"
    )
    assert load_table(path, "latency").rows[0].model == "b"
    assert load_table(path, "runtime stacks").rows[0].model == "a"
