"""Study recipes: the shipped ablation loads and expands as the B200/H200 ablation ran
it; a bad study recipe is one ``file:line:col`` error with a hint, from the library and
from the CLI."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import REPO
from vllmdiag import codec
from vllmdiag.cli.app import app
from vllmdiag.errors import ConfigError
from vllmdiag.jobs.study import Filters, StudyPlan, load_study, study_plan
from vllmdiag.jobs.study import plan as splan

ABLATION = REPO / "recipes" / "vllm-ablation-study.yaml"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(textwrap.dedent(body).lstrip())
    return path


GOOD = f"""
name: s
legs:
  "0.18": {{path: {sys.executable}}}
  "0.26": {{requirements: [packaging==24.0]}}
models:
  alpha: {{model: org/alpha, tp: 2}}
workloads:
  mixed: {{command: "{{python}} run.py {{model}} {{flags}}", metrics: [tput]}}
metrics:
  tput: {{json: t.json, key: tokens_per_second}}
"""


def test_the_shipped_ablation_expands_as_it_was_run() -> None:
    study = load_study(ABLATION)
    assert list(study.legs) == ["0.18", "0.26", "0.29"]
    cells = splan.expand(study)
    per_slot = len(study.legs) * sum(len(study.model_workloads(m)) for m in study.models)
    assert len(cells) == per_slot * study.repeats
    assert len({c.plan.id for c in cells}) == len(cells)
    gemma = [c for c in cells if c.slot.model == "gemma-4-26B-A4B-it"]
    legs = {c.slot.leg: c.plan.leg for c in gemma}
    assert legs["0.26"].name == "0.26+transformers==5.14.1"
    assert legs["0.26"].pins == ("transformers==5.14.1",)
    assert legs["0.29"].pins == () and legs["0.18"].name == "0.18"
    mixtral = next(c for c in cells if c.slot.model == "Mixtral-8x7B-Instruct-v0.1")
    assert [str(f) for f in mixtral.plan.flags] == ["--seed 0", "--tensor-parallel-size 2"]
    assert mixtral.plan.env == {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    plan = study_plan(study)
    argv = next(c.argv for c in plan.cells if c.id == "r1.0.29.gpt-oss-120b.single-request")
    assert argv[:3] == ("vllm", "bench", "latency") and "openai/gpt-oss-120b" in argv
    assert argv[-2:] == ("--tensor-parallel-size", "2") and "--batch-size" in argv


def test_repetition_is_the_outer_loop_and_filters_pick_a_backfill(tmp_path: Path) -> None:
    study = load_study(write(tmp_path, GOOD + "repeats: 2\n"))
    ids = [c.plan.id for c in splan.expand(study)]
    assert ids == [
        "r1.0.18.alpha.mixed",
        "r1.0.26.alpha.mixed",
        "r2.0.18.alpha.mixed",
        "r2.0.26.alpha.mixed",
    ]
    backfill = splan.expand(study, Filters(legs=("0.26",)))
    assert [c.plan.id for c in backfill] == ["r1.0.26.alpha.mixed", "r2.0.26.alpha.mixed"]
    with pytest.raises(ConfigError, match="did you mean 'alpha'"):
        Filters(models=("alpah",)).check(study)


BAD = [
    (
        "  alpha: {model: org/alpha, tpp: 2}\n",
        "models:\n  alpha: {model: org/alpha, tp: 2}\n",
        "unknown key 'tpp'",
        "did you mean 'tp'",
    ),
    (
        "  alpha: {model: org/alpha, tp: 0}\n",
        "models:\n  alpha: {model: org/alpha, tp: 2}\n",
        "greater than or equal to 1",
        None,
    ),
    (
        "  alpha:\n    model: org/alpha\n    pins: {'0.27': [packaging==23.2]}\n",
        "models:\n  alpha: {model: org/alpha, tp: 2}\n",
        "'0.27' is not one of the legs",
        "0.18, 0.26",
    ),
    (
        "  alpha:\n    model: org/alpha\n    pins: {'0.18': [packaging==23.2]}\n",
        "models:\n  alpha: {model: org/alpha, tp: 2}\n",
        "existing environment (path) and cannot take a pin",
        "pin on a leg vllmdiag builds",
    ),
    (
        "  alpha:\n    model: org/alpha\n    flags: [--tensor-parallel-size 4]\n",
        "models:\n  alpha: {model: org/alpha, tp: 2}\n",
        "--tensor-parallel-size is set by 'tp'",
        "tp: 4",
    ),
    (
        "  alpha:\n    model: org/alpha\n    workloads: [mixd]\n",
        "models:\n  alpha: {model: org/alpha, tp: 2}\n",
        "'mixd' is not one of the workloads",
        "mixed",
    ),
]


@pytest.mark.parametrize(("model", "replaces", "message", "hint"), BAD)
def test_a_bad_model_is_an_error_at_its_line(
    tmp_path: Path, model: str, replaces: str, message: str, hint: str | None
) -> None:
    body = textwrap.dedent(GOOD).lstrip().replace(replaces, "models:\n" + model)
    path = tmp_path / "study.yaml"
    path.write_text(body)
    with pytest.raises(ConfigError) as err:
        load_study(path)
    assert message in err.value.message
    line = next(i for i, text in enumerate(body.splitlines(), 1) if "alpha" in text)
    assert err.value.where is not None and err.value.where.startswith(f"{path}:")
    got_line = int(err.value.where.split(":")[-2])
    assert line <= got_line <= line + 3, err.value.where
    if hint is not None:
        assert err.value.hint is not None and hint in err.value.hint


def test_workload_and_metric_mistakes_point_at_the_workload(tmp_path: Path) -> None:
    two = GOOD.replace(
        "  tput: {json: t.json, key: tokens_per_second}",
        "  tput: {json: t.json, key: tokens_per_second}\n  lat: {json: l.json, key: avg}",
    ).replace(", metrics: [tput]}", "}")
    with pytest.raises(ConfigError) as err:
        load_study(write(tmp_path, two))
    assert "does not say which metrics it reports" in err.value.message
    assert err.value.where == f"{tmp_path / 'study.yaml'}:8:3"
    assert err.value.hint == "add 'metrics: [tput, lat]' (the ones it reports)"

    unknown = GOOD.replace("metrics: [tput]", "metrics: [tpt]")
    with pytest.raises(ConfigError) as err:
        load_study(write(tmp_path, unknown))
    assert "'tpt' is not one of the metrics" in err.value.message
    line = textwrap.dedent(unknown).lstrip().splitlines()[7]
    assert err.value.where == f"{tmp_path / 'study.yaml'}:8:{line.index('tpt') + 1}"

    keyless = GOOD.replace("{json: t.json, key: tokens_per_second}", "{json: t.json}")
    with pytest.raises(ConfigError, match="needs 'key'") as err:
        load_study(write(tmp_path, keyless))
    assert err.value.where == f"{tmp_path / 'study.yaml'}:10:9"


def test_names_that_would_share_a_cell_id_are_refused(tmp_path: Path) -> None:
    body = f"""
    name: s
    legs:
      a: {{path: {sys.executable}}}
      a.b: {{path: {sys.executable}}}
    models:
      b.c: {{model: x}}
      c: {{model: y}}
    workloads:
      w: {{command: "{{python}} run.py {{flags}}"}}
    metrics:
      m: {{regex: 'v=(\\d+)'}}
    """
    with pytest.raises(ConfigError, match=r"would share the cell id r1\.a\.b\.c\.w") as err:
        load_study(write(tmp_path, body))
    assert err.value.hint == "rename one of them (e.g. without the dot)"


def test_a_study_is_not_a_matrix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="a study has no 'arms'") as err:
        load_study(write(tmp_path, GOOD + "arms: [enforce-eager]\n"))
    assert err.value.where == f"{tmp_path / 'study.yaml'}:11:1"
    with pytest.raises(ConfigError, match="leg name 'a/b' is not allowed"):
        load_study(write(tmp_path, GOOD.replace('"0.26":', "a/b:")))


def test_a_command_without_flags_cannot_take_the_tp(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace(" {{flags}}", "").replace(" {flags}", ""))
    study = load_study(path)
    with pytest.raises(ConfigError, match="no \\{flags\\} placeholder") as err:
        study_plan(study)
    assert "--tensor-parallel-size" in err.value.message
    assert err.value.where == str(path)


def test_the_cli_says_it_in_one_line_and_json(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("tp: 2", "tp: two"))
    result = CliRunner().invoke(app, ["study", str(path)])
    assert result.exit_code == 1
    assert f"{path}:6:" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["study", str(path), "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)
    assert error["where"].startswith(f"{path}:6:") and "tp" in error["error"]
    typo = CliRunner().invoke(app, ["study", "tabels", str(tmp_path)])
    assert typo.exit_code == 2 and "did you mean 'tables'" in typo.output
    missing = CliRunner().invoke(app, ["study", "tables", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "no such study directory" in missing.output


def test_dry_run_shows_every_cell_and_command(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    result = CliRunner().invoke(app, ["study", str(path), "--dry-run", "--leg", "0.26", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert codec.dump(codec.load(StudyPlan, plan)) == plan
    # A study times things: 3 repeats unless it says, repetition the outer loop.
    assert [c["id"] for c in plan["cells"]] == [f"r{n}.0.26.alpha.mixed" for n in (1, 2, 3)]
    assert plan["cells"][0]["argv"][-3:] == ["org/alpha", "--tensor-parallel-size", "2"]
    once = CliRunner().invoke(
        app, ["study", str(path), "--dry-run", "--leg", "0.26", "--json", "--repeats", "1"]
    )
    assert [c["id"] for c in json.loads(once.stdout)["cells"]] == ["r1.0.26.alpha.mixed"]
    result = CliRunner().invoke(app, ["study", str(path), "--dry-run", "--model", "alpah"])
    assert result.exit_code == 1 and "did you mean 'alpha'" in result.output
