"""Recipes and arm files: what loads, and the line-precise errors for what does not."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import REPO
from vllmdiag.cli.app import app
from vllmdiag.errors import ConfigError
from vllmdiag.jobs.study import load_study
from vllmdiag.services.config import load_arm_library, load_recipe

GOOD = """\
name: demo
question: does it?
legs:
  here:
    requirements: [packaging]
baseline:
  leg: here
workloads:
  w:
    command: ["{python}", "-c", "print(1)", "{flags}"]
arms:
  - enforce-eager
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


def _error(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_recipe(_write(tmp_path, text))
    return info.value


def test_shipped_library_and_recipes_load() -> None:
    lib = load_arm_library()
    for name in (
        "enforce-eager",
        "gpu-memory-utilization-0.5",
        "attention-backend-triton",
        "attention-backend-env-triton",
        "moe-backend-triton",
        "nvidia-cutlass-dsl-4.5.3",
        "transformers-5.14.1",
        "omp-num-threads-1",
        "mm-processor-cache-gb-0",
        "debug-logging",
    ):
        assert lib.get(name).single_variable
    assert "cpuinfo" in lib.get("debug-logging").hypothesis
    assert lib.get("attention-backend-env-triton").honoured_by == "vllm<0.14"
    for recipe in sorted((REPO / "recipes").glob("*.yaml")):
        if "study" in recipe.stem:  # a study recipe (vllmdiag study), not a matrix's
            assert load_study(recipe).name
            continue
        assert load_recipe(recipe).name


def test_unknown_key_points_at_its_line_with_a_suggestion(tmp_path: Path) -> None:
    err = _error(tmp_path, GOOD.replace("  leg: here", "  leg: here\n  flgs: [--x]"))
    assert err.where == f"{tmp_path / 'recipe.yaml'}:8:3"
    assert "baseline.flgs: unknown key 'flgs'" in err.message
    assert err.hint == "did you mean 'flags'?"


def test_unknown_top_level_key(tmp_path: Path) -> None:
    err = _error(tmp_path, GOOD + "repeat: 3\n")
    assert err.where is not None and err.where.endswith("recipe.yaml:13:1")
    assert err.hint == "did you mean 'repeats'?"


def test_two_variables_in_one_arm(tmp_path: Path) -> None:
    text = GOOD + "  - name: both\n    env: {A: '1'}\n    flag: --enforce-eager\n"
    err = _error(tmp_path, text)
    assert err.where is not None and err.where.endswith("recipe.yaml:13:5")
    assert "arms[1]" in err.message and "changes 2 things" in err.message


def test_pin_that_does_not_parse(tmp_path: Path) -> None:
    err = _error(tmp_path, GOOD + "  - name: p\n    pin: nvidia-cutlass-dsl=4.5.3\n")
    assert err.where is not None and err.where.endswith("recipe.yaml:14:10")
    assert "arms[1].pin" in err.message and "PEP 508" in err.message


def test_unknown_arm_name_suggests_the_closest(tmp_path: Path) -> None:
    err = _error(tmp_path, GOOD.replace("- enforce-eager", "- enforce-eagr"))
    assert err.where is not None and err.where.endswith("recipe.yaml:12:5")
    assert err.hint is not None and "'enforce-eager'" in err.hint


def test_python_version_read_as_a_number(tmp_path: Path) -> None:
    err = _error(
        tmp_path,
        GOOD.replace(
            "    requirements: [packaging]", "    python: 3.10\n    requirements: [packaging]"
        ),
    )
    assert "legs.here.python" in err.message and "quote" in err.message


def test_baseline_leg_must_exist_and_bad_yaml(tmp_path: Path) -> None:
    err = _error(tmp_path, GOOD.replace("  leg: here", "  leg: there"))
    assert "baseline.leg 'there'" in err.message
    err = _error(tmp_path, "name: [unclosed\n")
    assert "not valid YAML" in err.message and err.where is not None


def test_models_expand_into_workloads(tmp_path: Path) -> None:
    text = GOOD.replace(
        'workloads:\n  w:\n    command: ["{python}", "-c", "print(1)", "{flags}"]\n',
        "workload:\n  builtin: vllm-latency\nmodels: [org/a-model, org/b-model]\n",
    )
    recipe = load_recipe(_write(tmp_path, text))
    assert list(recipe.workloads) == ["a-model", "b-model"]
    assert recipe.workloads["b-model"].model == "org/b-model"


def test_cli_reports_user_errors_without_a_traceback(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.replace("- enforce-eager", "- enforce-eagr"))
    result = CliRunner().invoke(app, ["matrix", str(path), "--dry-run"])
    assert result.exit_code == 1
    assert "unknown arm 'enforce-eagr'" in result.output
    assert "Traceback" not in result.output
    missing = CliRunner().invoke(app, ["matrix", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 1 and "no such recipe file" in missing.output


def test_dry_run_json_lists_every_cell_with_its_command() -> None:
    result = CliRunner().invoke(
        app, ["matrix", str(REPO / "recipes/thrmma-cpu.yaml"), "--dry-run", "--json"]
    )
    assert result.exit_code == 0, result.output
    import json

    plan = json.loads(result.stdout)
    assert len(plan["cells"]) == 8
    pin = next(c for c in plan["cells"] if c["arm"] == "nvidia-cutlass-dsl-4.5.3")
    assert pin["leg"] == "fresh+nvidia-cutlass-dsl==4.5.3"
    eager = next(c for c in plan["cells"] if c["arm"] == "enforce-eager")
    assert eager["argv"][-1] == "--enforce-eager"


def test_arms_cli_list_and_show() -> None:
    import json

    listed = CliRunner().invoke(app, ["arms", "list", "--json"])
    assert listed.exit_code == 0
    names = {a["name"] for a in json.loads(listed.stdout)["arms"]}
    assert {"enforce-eager", "nvidia-cutlass-dsl-4.5.3"} <= names
    shown = CliRunner().invoke(app, ["arms", "show", "enforce-eager"])
    assert shown.exit_code == 0 and "--enforce-eager" in shown.output
    bad = CliRunner().invoke(app, ["arms", "show", "enforce-eagre"])
    assert bad.exit_code == 1 and "did you mean 'enforce-eager'" in bad.output
