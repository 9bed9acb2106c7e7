"""What ``--help`` and usage lines show a newcomer: the main forms' options, usage in
the form they type, no markup, and both spellings of ``--resume``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import REPO
from vllmdiag.cli.app import app
from vllmdiag.cli.clickcompat import UsageError
from vllmdiag.cli.forms import resume_dir_form, resume_flag_form

ROOT = REPO
COMMANDS = [
    ["matrix"], ["study"], ["study", "tables"], ["profile"], ["profile", "diff"],
    ["profile", "capture"], ["triage"], ["fingerprint"], ["window"], ["bisect"],
    ["report"], ["compare"], ["doctor"], ["arms", "list"], ["arms", "show"],
]  # fmt: skip


def help_of(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    ("group", "options"),
    [
        ("study", ["--out", "--batch", "--resume", "--model", "--dry-run", "--grace"]),
        ("profile", ["--legs", "--arms", "--out", "--resume", "--grace"]),
    ],
)
def test_a_group_help_shows_its_main_form(group: str, options: list[str]) -> None:
    out = help_of(group)
    assert f"Usage: vllmdiag {group} [OPTIONS] RECIPE | COMMAND [ARGS]..." in out
    assert f"Usage: vllmdiag {group} [OPTIONS] RECIPE " in out  # the main form's own
    for option in options:
        assert option in out, option


def test_help_of_the_main_form_names_the_form_not_run() -> None:
    out = help_of("study", str(ROOT / "recipes" / "vllm-ablation-study.yaml"))
    assert "Usage: vllmdiag study [OPTIONS] RECIPE" in out
    assert "study run" not in out


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_no_help_shows_literal_backticks_or_braced_arguments(command: list[str]) -> None:
    out = help_of(*command)
    assert "``" not in out
    usage = next(line for line in out.splitlines() if "Usage:" in line)
    assert "{" not in usage, usage


def test_a_usage_error_writes_the_argument_plainly() -> None:
    result = CliRunner().invoke(app, ["matrix"])
    assert result.exit_code == 2
    assert "Usage: vllmdiag matrix [OPTIONS] RECIPE" in result.output


def test_resume_forms_are_rewritten_both_ways(tmp_path: Path) -> None:
    assert resume_dir_form(["r.yaml", "--out", "D", "--resume"]) == ["r.yaml", "--resume", "D"]
    assert resume_dir_form(["r.yaml", "--out=D", "--resume", "--wait"]) == [
        "r.yaml", "--resume", "D", "--wait",
    ]  # fmt: skip
    assert resume_dir_form(["r.yaml", "--resume", "D"]) == ["r.yaml", "--resume", "D"]
    with pytest.raises(UsageError, match="--resume needs the run directory"):
        resume_dir_form(["r.yaml", "--resume"])
    d = str(tmp_path)
    assert resume_flag_form(["r.yaml", "--resume", d]) == ["r.yaml", "--resume", "--out", d]
    assert resume_flag_form(["r.yaml", "--resume"]) == ["r.yaml", "--resume"]
    assert resume_flag_form(["--resume", "r.yaml"]) == ["--resume", "r.yaml"]  # a file
    with pytest.raises(UsageError, match="name two directories"):
        resume_flag_form(["r.yaml", "--out", "/elsewhere", "--resume", d])


def test_matrix_resumes_with_the_study_spelling(tmp_path: Path) -> None:
    recipe = tmp_path / "q.yaml"
    recipe.write_text(
        f"name: q\nquestion: q\nlegs:\n  here: {{path: {sys.executable}}}\n"
        "baseline: {leg: here}\n"
        'workloads:\n  w: {command: ["{python}", "-c", "pass"]}\ngpus: 0\n'
    )
    run = tmp_path / "run"
    first = CliRunner().invoke(app, ["matrix", str(recipe), "--out", str(run), "--json"])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(
        app, ["matrix", str(recipe), "--out", str(run), "--resume", "--json"]
    )
    assert again.exit_code == 0, again.output
    journal = (run / "run.jsonl").read_text()
    assert journal.count('"run_started"') == 2  # the same run directory, resumed
    assert '"cell_reused"' in journal  # its finished cell kept, not run again
    bare = CliRunner().invoke(app, ["matrix", str(recipe), "--resume"])
    assert bare.exit_code == 2 and "--resume needs the run directory" in bare.output


def test_study_resumes_with_the_matrix_spelling(tmp_path: Path) -> None:
    from tests.jobs.study.test_run import recipe, study

    path = recipe(tmp_path / "recipe", uv_leg=False)
    out = tmp_path / "study"
    study(str(path), "--out", str(out))
    resumed = study(str(path), "--resume", str(out))
    assert [c["outcome"] for c in resumed["cells"]] == ["pass"] * 4  # type: ignore[union-attr]
    batch = json.loads((out / "batches/batch-1/batch.json").read_text())
    assert [a["resumed"] for a in batch["attempts"]] == [False, True]
