"""``vllmdiag compare`` from the command line: the human view, options, and one-line
errors with exit 1 for every user mistake."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app

TABLES = FIXTURES / "tables"
B200 = str(TABLES / "b200.md")
H200 = str(TABLES / "h200.tsv")


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["compare", *args], env={"COLUMNS": "200"})
    return res.exit_code, res.stdout, res.stderr


def test_human_view_names_sides_rows_differences_and_agreements() -> None:
    code, out, _ = _run(B200, H200, "--name-a", "B200", "--name-b", "H200")
    assert code == 0
    assert "higher is better: B200: the heading says 'higher is better'" in out
    assert "speedup 0.26/0.18" in out and "speedup 0.29/0.26" in out
    assert "speedups that differ by more than 1.25x (11)" in out
    assert "Qwen3-VL-235B-A22B-Instruct-FP8 / image 0.26/0.18: 0.70x on B200, 0.71x on H200" in out
    assert "only in B200: GLM-5.2-NVFP4 / mixed" in out
    assert "B200, 0.18: not run/failed on that side: gemma-4-26B-A4B-it / mixed" in out


def test_pair_lower_is_better_and_thresholds() -> None:
    code, out, _ = _run(B200, H200, "--table", "latency", "--pair", "0.29/0.18", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["pairs"] == ["0.29/0.18"] and data["direction"] == "lower"
    gpt = next(r for r in data["rows"] if r["model"] == "gpt-oss-120b")
    assert gpt["a"] == round(4.04 / 2.50, 4)  # old/new: a speedup
    code, out, _ = _run(B200, H200, "--table", "latency")
    assert code == 0 and "borderline" in out and "printed rounding allows a factor" in out
    code, out, _ = _run(B200, H200, "--table", "latency", "--higher-is-better", "--json")
    gpt = next(r for r in json.loads(out)["rows"] if r["model"] == "gpt-oss-120b")
    assert gpt["a"] == round(2.45 / 4.04, 4)
    code, out, _ = _run(B200, H200, "--factor", "2", "--agree", "0.01", "--json")
    data = json.loads(out)
    assert [r["model"] for r in data["differs"]] == ["gpt-oss-120b", "gpt-oss-120b"]
    assert [r["model"] for r in data["agreements"]] == ["Qwen3-VL-235B-A22B-Instruct-FP8"]


def test_table_text_is_data_not_markup(tmp_path: Path) -> None:
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("model\tworkload\t0.18\t0.26\n[bold red]m[/]\t[link=x]w\t100\t200\n")
    b.write_text("model\tworkload\t0.18\t0.26\n[bold red]m[/]\t[link=x]w\t100\t100\n")
    code, out, _ = _run(str(a), str(b), "--name-a", "[b]A", "--md", str(tmp_path / "s.md"))
    assert code == 0, out
    assert "[bold red]m[/]" in out and "[link=x]w" in out and "[b]A" in out
    assert "[bold red]m[/] [link=x]w" in (tmp_path / "s.md").read_text()


def test_user_mistakes_exit_1_with_one_line_and_a_hint(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("model\tworkload\t0.18\t0.26\nm\tw\t1,000\tfast\n")
    cases = [
        ((str(bad), H200), f"{bad}:2:11: not a number in column '0.26': 'fast'"),
        ((B200, str(tmp_path / "nope.md")), "nope.md: no such file"),
        ((B200, H200, "--table", "prefill"), "no table's heading contains 'prefill'"),
        ((B200, H200, "--pair", "0.30/0.18"), "--pair '0.30/0.18': '0.30' is not a leg"),
        ((B200, H200, "--factor", "0.9"), "--factor 0.9 must be above 1"),
        ((B200, str(tmp_path)), "is a directory"),
        ((B200, H200, "--md", str(tmp_path)), "cannot write the summary"),
    ]
    for args, message in cases:
        code, out, err = _run(*args)
        assert code == 1, (args, out, err)
        assert out == ""
        first, hint = err.strip().split("\n")
        assert first.startswith("error: ") and message in first, err
        assert hint.startswith("  hint: ")
        assert "Traceback" not in err


def test_mixed_metrics_are_refused(tmp_path: Path) -> None:
    code, _, err = _run(B200, H200, "--table", "throughput", "--pair", "29/18")
    assert code == 0
    lat = tmp_path / "lat.md"
    latency = (TABLES / "b200.md").read_text().split("### Latency", 1)[1]
    lat.write_text("### Latency" + latency)
    code, _, err = _run(str(lat), H200)
    assert code == 1 and "A is a lower-is-better table" in err and "--table" in err
