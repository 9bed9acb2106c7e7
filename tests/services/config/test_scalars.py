"""Recipe values YAML cannot build or the model must not guess at: each a one-line
error at its ``file:line:col`` from the real CLI, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag.cli.app import app

HEAD = f"""\
name: t
question: what does it show?
legs:
  here: {{path: {sys.executable}}}
  built:
    requirements: [packaging]
"""
BASE = "baseline: {leg: here}\n"
WORKLOADS = 'workloads:\n  w: {command: ["{python}", "-c", "pass", "{flags}"]}\n'


def dry_run_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    result = CliRunner().invoke(app, ["matrix", str(path), "--dry-run"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.output.startswith("error: ")
    return result.output.replace(str(path), "R")


@pytest.mark.parametrize(
    ("value", "where", "said"),
    [
        ("2026-02-30", "R:7:20", "cannot read '2026-02-30' as a date (YYYY-MM-DD): day is out"),
        ("2026-13-45", "R:7:20", "cannot read '2026-13-45' as a date (YYYY-MM-DD): month must"),
        ("2026-02-30 10:00:00", "R:7:20", "as a date (YYYY-MM-DD): day is out of range"),
        ("!!int abc", "R:7:20", "cannot read 'abc' as an integer"),
        ("!!float abc", "R:7:20", "cannot read 'abc' as a number"),
        ("!!bool maybe", "R:7:20", "cannot read 'maybe' as true or false"),
        ("1" + "0" * 4400, "R:7:20", "4,401 digits, more than the 4,300 an integer may have"),
        ("!!omap [a: 1, a: 2]", "R:7:20", "not valid as an ordered map: a key appears twice"),
        ("[x, !!int y]", "R:7:24", "exclude_newer[1]: cannot read 'y' as an integer"),
        ("!!python/name:os.system", "R:7:20", "the YAML tag tag:yaml.org,2002:python/name"),
        ("!custom {a: 1}", "R:7:20", "the YAML tag !custom is not understood here"),
        ("!!binary aGVsbG8=", "R:7:20", "must be an ISO date (2026-09-20): b'hello'"),
    ],
)
def test_a_scalar_yaml_cannot_build_is_an_error_at_its_place(
    tmp_path: Path, value: str, where: str, said: str
) -> None:
    out = dry_run_error(tmp_path, HEAD + f"    exclude_newer: {value}\n" + BASE + WORKLOADS)
    assert out.startswith(f"error: {where}: legs.built.exclude_newer"), out
    assert said in out
    assert len(out.splitlines()) <= 2  # the error and its hint


def test_a_real_date_and_a_quoted_one_still_load(tmp_path: Path) -> None:
    for value in ("2026-02-28", "'2026-02-28'"):
        path = tmp_path / "recipe.yaml"
        path.write_text(HEAD + f"    exclude_newer: {value}\n" + BASE + WORKLOADS)
        result = CliRunner().invoke(app, ["matrix", str(path), "--dry-run"])
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("tail", "said"),
    [
        ("workloads: {}\n", "workloads: no workloads: a recipe needs at least one"),
        ('workloads:\n  ~: {command: ["{python}"]}\n', "R:9:3: workloads.~: a key is empty"),
        ("repeats: true\n" + WORKLOADS, "R:8:10: repeats: true is not a number here"),
        ("repeats: 2.5\n" + WORKLOADS, "R:8:10: repeats: Input should be a valid integer"),
        ("timeout: .inf\n" + WORKLOADS, "R:8:10: timeout: Input should be a finite number"),
        ("timeout: .nan\n" + WORKLOADS, "R:8:10: timeout: Input should be a finite number"),
        ("gpus: false\n" + WORKLOADS, "R:8:7: gpus: false is not a number here"),
        ("workloads:\n  w: {command: []}\n", "R:9:6: workloads.w: command is empty"),
        ('workloads:\n  w: {command: "  "}\n', "R:9:6: workloads.w: command is empty"),
        (
            'workloads:\n  w: {command: ["{python.nosuch}"]}\n',
            "R:9:6: workloads.w: command word '{python.nosuch}': unknown placeholder",
        ),
        (
            'workloads:\n  w: {command: "{python} {model[0]}"}\n',
            "unknown placeholder {model[0]}",
        ),
        ('workloads:\n  w: {command: ["{pyth"]}\n', "command word '{pyth'"),
        (
            "arms: [{name: a" + "b" * 5000 + ", env: {X: '1'}}]\n" + WORKLOADS,
            "R:8:15: arms[0].name: String should have at most 100 characters",
        ),
        (
            "arms: [{name: a" + "b" * 300 + ", env: {X: '1'}}]\n" + WORKLOADS,
            "at most 100 characters",
        ),
    ],
)
def test_a_recipe_value_the_model_must_not_guess_at(tmp_path: Path, tail: str, said: str) -> None:
    out = dry_run_error(tmp_path, HEAD + BASE + tail)
    assert said in out, out


def test_quoted_numbers_still_load(tmp_path: Path) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(HEAD + BASE + WORKLOADS + "repeats: '2'\ntimeout: '300'\n")
    result = CliRunner().invoke(app, ["matrix", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output


def test_a_misspelled_leg_is_named_at_its_place_with_the_closest_leg(tmp_path: Path) -> None:
    out = dry_run_error(tmp_path, HEAD + "baseline: {leg: hre}\n" + WORKLOADS)
    assert out.startswith("error: R:7:17: baseline.leg 'hre' is not one of the legs")
    assert "did you mean 'here'?" in out
    arms = "arms:\n  - {name: a, leg: bulit}\n"
    out = dry_run_error(tmp_path, HEAD + BASE + WORKLOADS + arms)
    assert out.startswith("error: R:11:20: arms[0].leg 'bulit' is not one of the legs")
    assert "did you mean 'built'?" in out
