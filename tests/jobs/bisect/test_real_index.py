"""bisect against the real index and real uv envs: packaging dropped LegacyVersion in 22.0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag.cli.app import app
from vllmdiag.jobs.bisect import BisectRequest, EndpointError, StepVerdict, bisect_releases

pytestmark = pytest.mark.network

CHECK = ("python", "-c", "import packaging.version as v; v.LegacyVersion")


def test_cli_bisect_finds_22_0_and_prints_one_json_object() -> None:
    result = CliRunner().invoke(
        app,
        [
            "bisect",
            "packaging",
            "--good",
            "21.0",
            "--bad",
            "23.0",
            "--fresh",
            "--json",
            "--",
            *CHECK,
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["first_bad"], data["last_good"]) == ("22.0", "21.3")
    steps = {s["version"]: s for s in data["steps"]}
    assert steps["21.0"]["verdict"] == "good" and steps["23.0"]["verdict"] == "bad"
    assert steps["22.0"]["rc"] == 1 and steps["21.3"]["rc"] == 0
    assert set(data["steps"][0]) >= {"version", "verdict", "rc", "elapsed_s"}
    assert len(data["steps"]) < len(data["candidates"])


def test_interrupted_bisect_resumes_from_its_journal() -> None:
    req = BisectRequest("packaging", "21.0", "23.0", CHECK, fresh=True)
    first = bisect_releases(req)
    lines = first.journal.read_text().splitlines()
    # As if killed while writing the fourth step: two whole steps and half a line.
    first.journal.write_text("\n".join([*lines[:3], lines[3][:10]]) + "\n")
    resumed = bisect_releases(BisectRequest("packaging", "21.0", "23.0", CHECK))
    assert (resumed.first_bad, resumed.last_good) == ("22.0", "21.3")
    by_version = {s.version: s for s in resumed.steps}
    kept = [json.loads(line)["version"] for line in lines[1:3]]
    assert all(by_version[v].resumed for v in kept)
    assert any(not s.resumed for s in resumed.steps)
    third = bisect_releases(BisectRequest("packaging", "21.0", "23.0", CHECK))
    assert all(s.resumed for s in third.steps) and third.elapsed_s < 5


def test_good_end_that_fails_is_an_error() -> None:
    with pytest.raises(EndpointError, match="--good version checks bad"):
        bisect_releases(BisectRequest("packaging", "22.0", "23.0", CHECK, fresh=True))
    result = CliRunner().invoke(
        app, ["bisect", "packaging", "--good", "22.0", "--bad", "23.0", "--", *CHECK]
    )
    assert result.exit_code == 1 and "checks bad" in result.output


def test_exit_125_skips_and_repeats_vote() -> None:
    skip_213 = (
        "python",
        "-c",
        "import sys, packaging, packaging.version as v\n"
        "if packaging.__version__ == '21.3': sys.exit(125)\n"
        "v.LegacyVersion",
    )
    report = bisect_releases(
        BisectRequest("packaging", "21.2", "22.0", skip_213, repeat=3, fresh=True)
    )
    assert (report.last_good, report.first_bad) == ("21.2", "22.0")
    assert report.skipped_between == ("21.3",) and not report.exact
    skipped = next(s for s in report.steps if s.version == "21.3")
    assert skipped.verdict is StepVerdict.SKIP and skipped.rcs == (125, 125, 125)


def test_metric_regression() -> None:
    score = (
        "python",
        "-c",
        "import packaging\n"
        "fast = int(packaging.__version__.split('.')[0]) < 22\n"
        "print('warming up'); print('score=' + ('100.0' if fast else '61.5'))",
    )
    report = bisect_releases(
        BisectRequest("packaging", "21.0", "23.0", score, metric="score", threshold=0.9, fresh=True)
    )
    assert (report.last_good, report.first_bad) == ("21.3", "22.0")
    assert report.baseline == 100.0
    bad = next(s for s in report.steps if s.version == "22.0")
    assert bad.value == 61.5 and "ratio=0.615" in bad.detail


def test_a_command_step_is_a_run_of_cells_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a relative script (the directory bisect was started in) that prints its metric as
    # JSON: the braces of the command reach it as written
    (tmp_path / "score.py").write_text(
        "import json, sys, packaging\n"
        "fast = int(packaging.__version__.split('.')[0]) < 22\n"
        "print(sys.argv[1]); print(json.dumps({'score': 100.0 if fast else 61.5}))\n"
    )
    monkeypatch.chdir(tmp_path)
    check = ("python", "score.py", "{literal}")
    report = bisect_releases(
        BisectRequest(
            "packaging", "21.0", "23.0", check, metric="score", threshold=0.9, repeat=2, fresh=True
        )
    )
    assert (report.last_good, report.first_bad) == ("21.3", "22.0")
    bad = next(s for s in report.steps if s.version == "22.0")
    assert bad.values == (61.5, 61.5) and bad.rcs == (0, 0)
    # the step's run directory: the runner's journal, one cell per repeat, judged
    step = report.journal.parent / "22.0"
    kinds = [json.loads(line)["event"] for line in (step / "run.jsonl").read_text().splitlines()]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("cell_finished") == 2
    result = json.loads((step / "cells" / "run1" / "result.json").read_text())
    assert result["outcome"] == "pass" and result["metrics"] == {"score": 61.5}
    log = (step / "cells" / "run1" / "log.txt").read_text()
    assert log.count("# vllmdiag: cell started") == 1 and "{literal}" in log
    assert (report.journal.parent / "22.0.install.log").read_text().startswith("env ")


RECIPE = """\
name: legacy-version
question: Which packaging release dropped LegacyVersion?
legs:
  plain:
    requirements: [packaging]
baseline:
  leg: plain
workloads:
  legacy:
    command: ["{python}", "-c", "import packaging.version as v; v.LegacyVersion"]
arms: []
repeats: 1
timeout: 120
"""


def test_recipe_cell_is_the_check(tmp_path: Path) -> None:
    recipe = tmp_path / "legacy.yaml"
    recipe.write_text(RECIPE)
    report = bisect_releases(
        BisectRequest("packaging", "21.0", "23.0", (), recipe=recipe, cell="legacy", fresh=True)
    )
    assert (report.last_good, report.first_bad) == ("21.3", "22.0")
    bad = next(s for s in report.steps if s.version == "22.0")
    assert "has no attribute 'LegacyVersion'" in bad.detail and bad.rc == 1
    # Each step ran the cell in its own run directory beside the journal.
    assert (report.journal.parent / "22.0" / "run0" / "run.jsonl").exists()
    result = CliRunner().invoke(
        app,
        [
            "bisect",
            "packaging",
            "--good",
            "21.0",
            "--bad",
            "23.0",
            "--recipe",
            str(recipe),
            "--cell",
            "legacy",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["first_bad"] == "22.0" and all(s["resumed"] for s in data["steps"])


def test_recipe_and_command_errors(tmp_path: Path) -> None:
    recipe = tmp_path / "legacy.yaml"
    recipe.write_text(RECIPE)
    runner = CliRunner()
    both = runner.invoke(
        app,
        [
            "bisect",
            "packaging",
            "--good",
            "21.0",
            "--bad",
            "23.0",
            "--recipe",
            str(recipe),
            "--cell",
            "legacy",
            "--",
            "true",
        ],
    )
    assert both.exit_code == 1 and "not both" in both.output
    no_cell = runner.invoke(
        app,
        [
            "bisect",
            "packaging",
            "--good",
            "21.0",
            "--bad",
            "23.0",
            "--recipe",
            str(recipe),
            "--cell",
            "legazy",
        ],
    )
    assert no_cell.exit_code == 1 and "no cell 'legazy'" in no_cell.output


def test_the_detail_says_why_a_version_was_bad_and_swapped_ends_are_named() -> None:
    result = CliRunner().invoke(
        app, ["bisect", "packaging", "--good", "21.0", "--bad", "23.0", "--", *CHECK]
    )
    assert result.exit_code == 0, result.output
    bad_rows = [line for line in result.output.splitlines() if "│ bad" in line]
    assert bad_rows and all("exit 1: AttributeError" in row for row in bad_rows), result.output
    good_rows = [line for line in result.output.splitlines() if "│ good" in line]
    assert good_rows and all("exit 0" in row for row in good_rows), result.output

    swapped = CliRunner().invoke(
        app, ["bisect", "packaging", "--good", "23.0", "--bad", "21.0", "--", *CHECK]
    )
    assert swapped.exit_code == 1, swapped.output
    assert "--good 23.0 checks bad and --bad 21.0 checks good" in swapped.output
    assert "swap them: --good 21.0 --bad 23.0" in swapped.output
    assert "Traceback" not in swapped.output
