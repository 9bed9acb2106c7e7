"""Is the difference real? Metric matrices run for real (real child processes, a real run
directory) on a benchmark with ±30 % run-to-run noise and one arm that is really 5 %
faster: the verdict calls only what the run's own evidence separates from noise, names
its noise estimate in summary.md, summary.txt and verdict.json, and with one repeat calls
nothing at all."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.recipes import write_recipe
from vllmdiag import codec
from vllmdiag.cli.app import app
from vllmdiag.model.verdict import Verdict

#: The benchmark: each run takes the next factor of a fixed ±30 % sequence (one counter
#: file for the whole matrix, so the noise is run-to-run, not per arm); SPEED is the
#: arm's real effect.
BENCH = """
import json, os, sys
out, counter = sys.argv[1], sys.argv[2]
factors = [1.3, 0.7, 1.0, 0.75, 1.25, 1.1, 0.9, 1.2, 0.8, 1.15, 0.85, 1.0]
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
value = 100.0 * factors[n % len(factors)] * float(os.environ.get("SPEED", "1"))
json.dump({"tokens_per_second": value}, open(os.path.join(out, "r.json"), "w"))
print(f"tokens_per_second={value}")
"""


def _recipe(tmp_path: Path, extra: str = "") -> Path:
    body = f"""\
baseline: {{leg: here}}
workloads:
  bench:
    command: ["{{python}}", "{{recipe_dir}}/bench.py", "{{out_dir}}", "{{recipe_dir}}/counter"]
arms:
  - {{name: fast, env: {{SPEED: "1.05"}}}}
  - {{name: noop, env: {{UNRELATED: "1"}}}}
metrics:
  - {{name: tps, json: r.json, key: tokens_per_second}}
{extra}"""
    return write_recipe(
        tmp_path,
        body,
        name="noisy",
        question="is the fast arm faster?",
        scripts={"bench.py": BENCH},
    )


def _run(tmp_path: Path, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(
        app, ["matrix", str(_recipe(tmp_path)), "--out", str(tmp_path / "run"), "--json", *args]
    )
    assert result.exit_code == 0, result.output
    report: dict[str, object] = json.loads(result.stdout)
    return report


def _arms(report: dict[str, object]) -> dict[str, dict[str, object]]:
    verdict = report["verdict"]
    assert isinstance(verdict, dict)
    return {a["name"]: a for a in verdict["arms"]}


def test_three_repeats_by_default_and_noise_is_no_difference(tmp_path: Path) -> None:
    report = _run(tmp_path)  # the recipe does not say: a metric matrix gets 3 repeats
    cells = report["cells"]
    assert isinstance(cells, list) and len(cells) == 9
    assert [c["repeat"] for c in cells] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    arms = _arms(report)
    for name in ("fast", "noop"):
        square = arms[name]["workloads"]["bench"]  # type: ignore[index]
        assert square["difference_detected"] is False, arms[name]
        assert arms[name]["effect"] == "ruled_out"
        assert "no difference detected" in str(arms[name]["detail"])
    # fast's median is 1.40x the baseline's: far beyond 5 %, inside the measured noise
    fast = arms["fast"]["workloads"]["bench"]  # type: ignore[index]
    assert fast["ratio"] == pytest.approx(126.0 / 90.0)
    verdict = codec.load(Verdict, json.loads((tmp_path / "run/verdict.json").read_text()))
    noise = verdict.noise["bench"]
    # the largest same-settings spread: fast's repeats, 131.25 / 73.5
    assert noise.value == pytest.approx(131.25 / 73.5 - 1)
    assert noise.source == "repeats of arm fast" and noise.n == 9 and noise.groups == 3
    assert noise.method.startswith("max/min-1")
    md = (tmp_path / "run/summary.md").read_text()
    assert "## Noise (measured from this run)" in md
    assert "| bench | 78.6% | max/min-1" in md and "repeats of arm fast" in md
    txt = (tmp_path / "run/summary.txt").read_text()
    assert "noise on bench: 78.6% (max/min-1" in txt
    assert "worse" not in md and "worse" not in txt


def test_one_repeat_calls_nothing_and_says_how_to_measure(tmp_path: Path) -> None:
    report = _run(tmp_path, "--repeats", "1")
    arms = _arms(report)
    fast = arms["fast"]["workloads"]["bench"]  # type: ignore[index]
    assert fast["ratio"] == pytest.approx(0.7 * 1.05 / 1.3)  # the "0.57x, worse"
    for name in ("fast", "noop"):
        assert arms[name]["effect"] == "not_called", arms[name]
        assert arms[name]["workloads"]["bench"]["difference_detected"] is None  # type: ignore[index]
        assert "worse" not in str(arms[name]["detail"])
    verdict = report["verdict"]
    assert isinstance(verdict, dict)
    assert verdict["noise"]["bench"]["value"] is None
    assert "run with --repeats 3" in verdict["summary"]
    assert "Not called (the run cannot separate them from noise): fast, noop." in verdict["summary"]
    for name in ("summary.md", "summary.txt"):
        text = (tmp_path / "run" / name).read_text()
        assert "--repeats 3" in text and "worse" not in text


def test_a_recipe_that_asks_for_one_repeat_gets_no_calls(tmp_path: Path) -> None:
    path = _recipe(tmp_path, "repeats: 1\n")
    result = CliRunner().invoke(app, ["matrix", str(path), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["cells"]) == 3
    again = CliRunner().invoke(app, ["matrix", str(path), "--dry-run", "--json", "--repeats", "4"])
    assert len(json.loads(again.stdout)["cells"]) == 12


def test_an_a_a_control_is_evidence_of_noise_even_without_repeats(tmp_path: Path) -> None:
    # A control on the baseline's own leg runs exactly the baseline's cells: an A/A pair.
    path = _recipe(tmp_path, "repeats: 1\ncontrols: [here]\n")
    result = CliRunner().invoke(
        app, ["matrix", str(path), "--out", str(tmp_path / "run"), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    noise = report["verdict"]["noise"]["bench"]
    # baseline 130, then fast 73.5, noop 100, control 75: the A/A pair is 130 vs 75
    assert noise["value"] == pytest.approx(130 / 75 - 1)
    assert noise["source"] == "A/A pair baseline-equal control here"
    arms = _arms(report)
    # The noise is known, but a single value against a single value is never called.
    assert arms["fast"]["effect"] == "not_called"
    assert "not called (a single value)" in str(arms["fast"]["detail"])
    assert "A/A pair" in str(arms["here"]["detail"])
    summary = report["verdict"]["summary"]
    assert "largest: A/A pair baseline-equal control here" in summary
    assert "a single value is never called against another; run with --repeats 3" in summary


def test_the_verdict_is_decided_again_from_the_run_directory_alone(tmp_path: Path) -> None:
    _run(tmp_path)
    run = tmp_path / "run"
    written = {n: (run / n).read_bytes() for n in ("summary.md", "summary.txt", "verdict.json")}
    for name in written:
        (run / name).unlink()
    (tmp_path / "recipe.yaml").unlink()  # nothing but the run directory
    result = CliRunner().invoke(app, ["matrix", "verdict", str(run), "--json"])
    assert result.exit_code == 0, result.output
    assert codec.load(Verdict, json.loads(result.stdout)).noise["bench"].source == (
        "repeats of arm fast"
    )
    assert {n: (run / n).read_bytes() for n in written} == written
    journal = [json.loads(x) for x in (run / "run.jsonl").read_text().splitlines()]
    assert journal[-1]["event"] == "verdict_recomputed" and journal[-1]["cells"] == 9


def test_matrix_verdict_on_what_is_not_a_run_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["matrix", "verdict", str(tmp_path)])
    assert result.exit_code == 1
    assert "no manifest.json: not a matrix run" in result.output
    assert "Traceback" not in result.output


DRIFTING = """
import json, os, sys
out, counter = sys.argv[1], sys.argv[2]
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
value = (100.0 if n < 4 else 130.0) + 0.1 * n  # a neighbour starts mid-run
json.dump({"tokens_per_second": value}, open(os.path.join(out, "r.json"), "w"))
"""


def test_the_baseline_measured_between_arms_shows_the_drift(tmp_path: Path) -> None:
    path = _recipe(tmp_path, "repeats: 2\n")
    (tmp_path / "bench.py").write_text(textwrap.dedent(DRIFTING))
    plan = CliRunner().invoke(
        app, ["matrix", str(path), "--dry-run", "--json", "--baseline-between-arms"]
    )
    ids = [c["id"] for c in json.loads(plan.stdout)["cells"]]
    assert ids[:4] == ["r1.baseline.bench", "r1.fast.bench", "r1.baseline~2.bench", "r1.noop.bench"]
    assert len(ids) == 8
    result = CliRunner().invoke(
        app,
        ["matrix", str(path), "--out", str(tmp_path / "run"), "--json", "--baseline-between-arms"],
    )
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)["verdict"]
    assert isinstance(verdict, dict)
    drift = verdict["drift"]["bench"]
    # baseline runs 0, 2 (repeat 1) and 4, 6 (repeat 2): 100.0, 100.2 early; 130.4, 130.6 late
    assert drift["early"] == pytest.approx(100.1) and drift["late"] == pytest.approx(130.5)
    assert drift["drifted"] is True
    assert "Baseline on bench drifted: 100.1 early, 130.5 late (1.30x" in verdict["summary"]
    assert "- Baseline on bench drifted" in (tmp_path / "run/summary.md").read_text()
    assert "baseline on bench drifted" in (tmp_path / "run/summary.txt").read_text()
    assert verdict["baseline"]["bench"]["n"] == 4  # every baseline measurement counts
    for extra in ([], [str(tmp_path), "--dry-run"], [str(tmp_path), "--repeats", "3"]):
        bad = CliRunner().invoke(app, ["matrix", "verdict", *extra])
        assert bad.exit_code == 2 and "takes one RUN_DIR" in bad.output, bad.output
