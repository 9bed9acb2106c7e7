"""The profile jobs as a library: typed results that read back, sides from a recipe."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vllmdiag.config import load_recipe
from vllmdiag.errors import ConfigError, VllmdiagError
from vllmdiag.profile import job
from vllmdiag.profile.capture import CaptureResult
from vllmdiag.profile.run import ProfileRun, load_run
from vllmdiag.profile.sides import plan_sides

H200 = Path(__file__).parent / "fixtures" / "traces" / "h200"


def _run(root: Path) -> ProfileRun:
    caps = []
    for name in ("eager", "graph"):
        dest = root / name / "torch"
        shutil.copytree(H200 / name, dest)
        caps.append(CaptureResult(name, "torch", True, dest, ("trace.json.gz",), None, 1.5,
                                  dest / "capture.log", ("launcher",)))  # fmt: skip
    nsys_dir = root / "graph" / "nsys"
    caps.append(CaptureResult("graph", "nsys", False, nsys_dir, (), "no nsys on PATH", 0.0,
                              nsys_dir / "capture.log"))  # fmt: skip
    run = ProfileRun(root, tuple(caps), ("a warning",))
    (root / "profile.json").write_text(json.dumps(run.to_json()))
    return run


def test_profile_json_reads_back_typed_even_after_a_move(tmp_path: Path) -> None:
    run = _run(tmp_path / "first")
    shutil.move(tmp_path / "first", tmp_path / "moved")
    back = load_run(tmp_path / "moved")
    assert back is not None
    assert back.to_json() == ProfileRun(
        tmp_path / "moved",
        tuple(
            CaptureResult(c.leg, c.backend, c.ok, tmp_path / "moved" / c.leg / c.out.name,
                          c.files, c.reason, c.elapsed_s,
                          tmp_path / "moved" / c.leg / c.out.name / "capture.log", c.notes)
            for c in run.captures
        ),
        run.warnings,
    ).to_json()  # fmt: skip
    assert back.sides(job.GPU_BACKENDS) == [
        ("eager", tmp_path / "moved" / "eager" / "torch"),
        ("graph", tmp_path / "moved" / "graph" / "torch"),
    ]
    assert load_run(tmp_path) is None  # not a run directory


@pytest.mark.parametrize(
    "bad",
    ['{"schema": 2, "captures": []}', '{"schema": 1, "captures": {}}', "[1]",
     '{"schema": 1, "captures": [{"leg": "a", "backend": "torch"}]}', "{"],
)  # fmt: skip
def test_profile_json_that_does_not_read_back(tmp_path: Path, bad: str) -> None:
    (tmp_path / "profile.json").write_text(bad)
    with pytest.raises(VllmdiagError, match=r"profile\.json does not read back"):
        load_run(tmp_path)


def test_diff_of_a_run_writes_beside_it_and_returns_typed(tmp_path: Path) -> None:
    _run(tmp_path)
    res = job.diff_inputs(tmp_path, None, out=None, top=5, runs_root=tmp_path / "runs")
    assert res.names == ("eager", "graph") and res.diff is not None
    assert res.out == tmp_path / "diff" and not (tmp_path / "runs").exists()
    files = dict(res.files)
    assert set(files) == {"summary", "picture", "json"}
    assert json.loads(files["json"].read_text())["legs"][1]["graph_kernels"] == 3400
    with pytest.raises(VllmdiagError, match="whole profile run"):
        job.diff_inputs(tmp_path, H200 / "sdpa", out=None, top=5, runs_root=tmp_path)


RECIPE = """name: sides
question: which side is slower?
legs:
  old: {path: /usr}
  new: {python: "3.12", requirements: ["vllm==0.26.0"]}
baseline:
  leg: old
  env: {VLLM_WORKER_MULTIPROC_METHOD: spawn}
  flags: ["--max-model-len 4096"]
arms: [enforce-eager, nvidia-cutlass-dsl-4.5.3]
workloads:
  w: {builtin: vllm-latency, model: m}
"""


@pytest.fixture
def recipe(tmp_path: Path):  # type: ignore[no-untyped-def]
    p = tmp_path / "r.yaml"
    p.write_text(RECIPE)
    return load_recipe(p)


def test_two_legs_with_the_baseline_flags(recipe) -> None:  # type: ignore[no-untyped-def]
    a, b = plan_sides(recipe, legs=["old", "new"])
    assert (a.leg.name, b.leg.name) == ("old", "new")
    assert [f.name for f in b.flags] == ["--max-model-len"]
    assert b.env == {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"} and b.arm is None


def test_baseline_vs_arms_on_one_leg(recipe) -> None:  # type: ignore[no-untyped-def]
    base, eager = plan_sides(recipe, arms=["baseline", "enforce-eager"])
    assert base.leg.name == eager.leg.name == "old"
    assert [f.name for f in eager.flags] == ["--max-model-len", "--enforce-eager"]
    assert eager.arm == "enforce-eager" and base.arm is None
    _, pinned = plan_sides(recipe, arms=["baseline", "nvidia-cutlass-dsl-4.5.3"], leg="new")
    assert pinned.leg.key() != plan_sides(recipe, legs=["new", "old"])[0].leg.key()
    assert "nvidia-cutlass-dsl==4.5.3" in pinned.leg.pins
    with pytest.raises(VllmdiagError, match="cannot take a pin"):  # a path: leg is as it is
        plan_sides(recipe, arms=["baseline", "nvidia-cutlass-dsl-4.5.3"])
    # an arm the recipe does not list comes from the library
    _, lib = plan_sides(recipe, arms=["baseline", "gpu-memory-utilization-0.5"])
    assert [f.name for f in lib.flags][-1] == "--gpu-memory-utilization"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "not both and not neither"),
        ({"legs": ["old"], "arms": ["baseline"]}, "not both and not neither"),
        ({"legs": ["old", "old"]}, "two different sides"),
        ({"legs": ["old", "neww"]}, "did you mean 'new'"),
        ({"arms": ["baseline", "enforce-eagr"]}, "did you mean 'enforce-eager'"),
        ({"arms": ["baseline", "enforce-eager"], "leg": "olde"}, "did you mean 'old'"),
        ({"legs": ["old", "new"], "leg": "old"}, "--leg goes with --arms"),
    ],
)
def test_side_mistakes_are_config_errors(recipe, kwargs, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=message):
        plan_sides(recipe, **kwargs)
