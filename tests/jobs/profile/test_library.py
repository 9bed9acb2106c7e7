"""The profile jobs as a library: typed results that read back, sides from a recipe."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from vllmdiag import codec
from vllmdiag.errors import ConfigError, VllmdiagError
from vllmdiag.jobs.profile import diff_command as job
from vllmdiag.jobs.profile.capture import GPU_BACKENDS, Backend, CaptureResult
from vllmdiag.jobs.profile.diff.report import CpuDiff, GpuDiff
from vllmdiag.jobs.profile.events import (
    CaptureFallback,
    CaptureFinished,
    CaptureStarted,
    ProfileStarted,
)
from vllmdiag.jobs.profile.results import ProfileOutcome, ProfileRun, load_run, write_run
from vllmdiag.jobs.profile.sides import plan_sides
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.plan import expand
from vllmdiag.services.config import load_recipe

H200 = FIXTURES / "traces" / "h200"
REAL = FIXTURES / "vllm026" / "profile"


def _run(root: Path) -> ProfileRun:
    caps = []
    for name in ("eager", "graph"):
        dest = root / "cells" / f"{name}.torch" / "out"
        shutil.copytree(H200 / name, dest)
        caps.append(
            CaptureResult(
                name,
                Backend.TORCH,
                True,
                dest,
                ("trace.json.gz",),
                None,
                1.5,
                dest.parent / "log.txt",
                ("launcher",),
                f"{name}.torch",
            )
        )
    nsys_dir = root / "cells" / "graph.nsys" / "out"
    caps.append(CaptureResult("graph", Backend.NSYS, False, nsys_dir, (), "no nsys on PATH", 0.0,
                              nsys_dir.parent / "log.txt", cell="graph.nsys"))  # fmt: skip
    run = ProfileRun(root, tuple(caps), ("a warning",))
    write_run(run)
    return run


def _moved(run: ProfileRun, old: Path, new: Path) -> ProfileRun:
    def at(p: Path) -> Path:
        return new / p.relative_to(old)

    caps = tuple(
        CaptureResult(c.leg, c.backend, c.ok, at(c.out), c.files, c.reason, c.elapsed_s,
                      at(c.log), c.notes, c.cell)
        for c in run.captures
    )  # fmt: skip
    return ProfileRun(new, caps, run.warnings)


def test_profile_json_reads_back_typed_even_after_a_move(tmp_path: Path) -> None:
    run = _run(tmp_path / "first")
    assert load_run(tmp_path / "first") == run
    data = json.loads((tmp_path / "first" / "profile.json").read_text())
    assert data["schema"] == 2 and data["captures"][0]["out"] == "cells/eager.torch/out"
    assert data["captures"][0]["backend"] == "torch"  # the enum's value, as before
    shutil.move(tmp_path / "first", tmp_path / "moved")
    back = load_run(tmp_path / "moved")
    assert back == _moved(run, tmp_path / "first", tmp_path / "moved")
    assert back is not None and back.sides(GPU_BACKENDS) == [
        ("eager", tmp_path / "moved" / "cells" / "eager.torch" / "out"),
        ("graph", tmp_path / "moved" / "cells" / "graph.torch" / "out"),
    ]
    assert load_run(tmp_path) is None  # not a run directory


def test_profile_json_of_the_previous_version_reads_back(tmp_path: Path) -> None:
    """Schema 1 (a real one, vLLM 0.26 on an H200): absolute paths of
    ``<run>/<side>/<backend>/``, rebased onto where the run is now."""
    shutil.copytree(REAL, tmp_path / "real")
    run = load_run(tmp_path / "real")
    assert run is not None and run.out == tmp_path / "real"
    base, eager = run.captures
    assert (base.leg, base.backend, base.ok) == ("baseline", Backend.TORCH, True)
    assert base.out == tmp_path / "real" / "baseline" / "torch"
    assert base.log == base.out / "capture.log" and base.log.is_file()
    assert eager.elapsed_s == 108.177 and "--profiler-config" in eager.notes[0]
    second = ("enforce-eager", tmp_path / "real" / "enforce-eager" / "torch")
    assert run.sides(GPU_BACKENDS)[1] == second
    # written again, it is the current schema, and reads back the same
    write_run(run)
    assert json.loads((tmp_path / "real" / "profile.json").read_text())["schema"] == 2
    assert load_run(tmp_path / "real") == run


@pytest.mark.parametrize(
    "bad",
    ['{"schema": 3, "captures": []}', '{"schema": 1, "captures": {}}', "[1]",
     '{"schema": 1, "captures": [{"leg": "a", "backend": "torch"}]}', "{",
     '{"schema": 2, "captures": []}', '{"schema": 2, "out": ".", "captures": [{"leg": "a"}]}',
     '{"schema": 2, "out": ".", "captures": [{"leg": "a", "backend": "tensorboard", "ok": true,'
     ' "out": "x", "files": [], "reason": null, "elapsed_s": 1, "log": "y"}]}'],
)  # fmt: skip
def test_profile_json_that_does_not_read_back(tmp_path: Path, bad: str) -> None:
    (tmp_path / "profile.json").write_text(bad)
    with pytest.raises(VllmdiagError, match=r"profile\.json does not read back"):
        load_run(tmp_path)


def test_diff_of_a_run_writes_beside_it_and_returns_typed(tmp_path: Path) -> None:
    _run(tmp_path)
    res = job.diff_inputs(tmp_path, None, out=None, top=5, runs_root=tmp_path / "runs")
    assert isinstance(res, GpuDiff) and res.names == ("eager", "graph")
    assert not (tmp_path / "runs").exists()
    assert set(res.files) == {"summary", "picture", "json"}
    assert all(p.parent == tmp_path / "diff" for p in res.files.values())
    written = json.loads(res.files["json"].read_text())
    assert written["legs"][1]["graph_kernels"] == 3400
    assert codec.load(GpuDiff, written) == res  # diff.json reads back into the same value
    with pytest.raises(VllmdiagError, match="whole profile run"):
        job.diff_inputs(tmp_path, H200 / "sdpa", out=None, top=5, runs_root=tmp_path)


def _cell(outcome: Outcome) -> CellResult:
    return CellResult(id="r1.a.w.torch", arm="a", workload="w", repeat=1, outcome=outcome,
                      rc=0, elapsed_s=1.0, leg="old")  # fmt: skip


@pytest.mark.parametrize(
    "value",
    [
        CaptureResult("a", Backend.PYSPY, True, Path("/r/out"), ("p.pyspy.txt",), None, 2.5,
                      Path("/r/log.txt"), ("n",), "a.pyspy"),
        ProfileStarted(Path("/r"), ("a: leg x, baseline flags", "b: leg y, arm z"), "w",
                       (Backend.NSYS, Backend.TORCH), 3, 10),
        CaptureStarted("a", Backend.TORCH, "r1.a.w.torch", ("vllm", "bench"), ("why",)),
        CaptureFallback("a", Backend.NSYS, Backend.TORCH, "no nsys"),
        CpuDiff(("a", "b"), (), {"summary": Path("/r/summary.md")}),
        ProfileOutcome(ProfileRun(Path("/r"), (), ("w",)), cells=(_cell(Outcome.PASS),),
                       interrupted=True, stopped_by="SIGTERM"),
    ],
)  # fmt: skip
def test_profile_values_round_trip_through_the_codec(value: object) -> None:
    assert codec.load(type(value), json.loads(json.dumps(codec.dump(value)))) == value


def test_events_and_outcomes_round_trip_with_a_real_diff(tmp_path: Path) -> None:
    run = _run(tmp_path)
    res = job.diff_run(run, top=5)
    assert isinstance(res, GpuDiff)
    outcome = ProfileOutcome(run, diff=res)
    assert codec.load(ProfileOutcome, json.loads(json.dumps(codec.dump(outcome)))) == outcome
    finished = CaptureFinished(run.captures[0])
    assert codec.load(CaptureFinished, codec.dump(finished)) == finished
    assert not outcome.failed and ProfileOutcome(run).failed


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
    assert (a.cell.id, b.cell.id) == ("r1.old.w", "r1.new.w") and b.cell.workload == "w"


def test_an_arm_side_is_the_matrix_cell_of_that_arm(recipe) -> None:  # type: ignore[no-untyped-def]
    """The plan layer applies the arm: the side is the very cell the matrix would run."""
    no_pin = recipe.model_copy(update={"arms": [a for a in recipe.arms if not a.pin]})
    matrix = {c.arm: c for c in expand(no_pin)}
    base, eager = plan_sides(recipe, arms=["baseline", "enforce-eager"])
    assert base.cell == matrix["baseline"] and eager.cell == matrix["enforce-eager"]
    _, pinned = plan_sides(recipe, legs=["old", "enforce-eager"])
    assert pinned.cell == matrix["enforce-eager"]


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
