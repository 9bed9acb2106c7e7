"""The diff on real H200 captures of the decode loop, two single-variable pairs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag import codec
from vllmdiag.cli.app import app
from vllmdiag.jobs.profile.diff import time_diff as diff
from vllmdiag.jobs.profile.diff.report import GpuDiff, gpu_report
from vllmdiag.readers.traces import families, leg
from vllmdiag.readers.traces.leg import CaptureError
from vllmdiag.readers.traces.timeline import Timeline

H200 = FIXTURES / "traces" / "h200"
TIMING = json.loads((H200 / "timing.json").read_text())


@pytest.fixture(scope="module")
def legs() -> dict[str, leg.LegProfile]:
    return {n: leg.load(H200 / n) for n in ("eager", "graph", "sdpa")}


def test_graph_replay_gap_is_idle_time_and_reconciles_with_wall_clock(
    legs: dict[str, leg.LegProfile],
) -> None:
    d = diff.diff(legs["eager"], legs["graph"])
    wall = (
        TIMING["graph"]["window_profiled_wall_s"] - TIMING["eager"]["window_profiled_wall_s"]
    ) * 1e6
    assert d.wall_delta_us == pytest.approx(wall)
    # the kernels are the same work: GPU time moves by ~2 %, the window by ~86 %
    assert abs(d.delta_us) < 0.05 * legs["eager"].gpu_time_us
    assert d.idle_delta_us < -0.9 * abs(wall)
    # busy + idle is the capture window; it matches the launcher's clock within 1 %
    assert d.busy_delta_us + d.idle_delta_us == pytest.approx(d.window_delta_us)
    assert d.explained == pytest.approx(1.0, abs=0.01)
    assert d.launch_delta_us < 0 and legs["graph"].launches < legs["eager"].launches / 10
    assert any("only graph replayed CUDA graphs" in w for w in d.warnings)
    assert "GPU idle -9" in d.reconciliation


def test_attention_swap_names_the_kernels(legs: dict[str, leg.LegProfile]) -> None:
    d = diff.diff(legs["eager"], legs["sdpa"])
    fam = {r.family: r for r in d.families}
    # sdpa brings a fused attention kernel and drops the einsum GEMMs and the softmax
    assert fam[families.ATTENTION].a_us == 0 and fam[families.ATTENTION].b_us > 0
    assert fam[families.GEMM].delta_us < 0 and fam[families.NORM_ACT].delta_us < 0
    top_names = {r.name for r in d.top[:4]}
    assert "{anon}::softmax_warp_forward" in top_names
    assert any(r.family == families.ATTENTION for r in d.top[:4])
    # shares of all kernel rows add up to the whole delta
    everything = diff.diff(legs["eager"], legs["sdpa"], top=10_000)
    assert sum(r.delta_us for r in everything.top) == pytest.approx(d.delta_us)
    assert sum(r.share or 0 for r in d.families) == pytest.approx(1.0)
    assert not d.warnings


def test_json_keys_and_counts(legs: dict[str, leg.LegProfile]) -> None:
    report = gpu_report(diff.diff(legs["eager"], legs["graph"]))
    out = codec.dump(report)
    assert codec.load(GpuDiff, json.loads(json.dumps(out))) == report  # reads back typed
    a, b = out["legs"]
    assert {"name", "kernels", "gpu_busy_us", "gpu_idle_us", "steps"} <= a.keys()
    assert (a["kernels"], b["kernels"]) == (3280, 3480)  # graph replays included
    assert (a["steps"], b["steps"]) == (40, 40)
    assert out["delta_us"] == pytest.approx(b["gpu_time_us"] - a["gpu_time_us"])
    assert {"family", "a_us", "b_us", "delta_us"} <= out["families"][0].keys()
    assert {"name", "family", "a_us", "b_us", "delta_us", "share"} <= out["top"][0].keys()
    json.dumps(out)


def test_per_step_and_per_token(legs: dict[str, leg.LegProfile]) -> None:
    d = diff.diff(legs["eager"], legs["sdpa"])
    assert legs["eager"].output_tokens == 40 * 8  # launcher: batch 8 per step
    assert d.per_step[0] == pytest.approx(legs["eager"].gpu_time_us / 40)
    assert d.per_token[1] == pytest.approx(legs["sdpa"].gpu_time_us / 320)


def test_different_work_is_warned(legs: dict[str, leg.LegProfile]) -> None:
    fewer = replace(legs["sdpa"], step_count=20, meta={**legs["sdpa"].meta, "tokens": 160})
    d = diff.diff(legs["eager"], fewer)
    assert any("different numbers of steps" in w for w in d.warnings)
    assert any("different numbers of tokens" in w for w in d.warnings)


def test_zero_kernels_is_a_failed_capture() -> None:
    tl = Timeline("cpu-only.json")
    tl.cpu_op("aten::mm", 12.0)
    with pytest.raises(CaptureError, match="zero GPU kernels"):
        leg.merge("cpu", [tl.finish()], {})


def test_cli_diff_json_summary_and_picture(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        [
            "profile",
            "diff",
            str(H200 / "eager"),
            str(H200 / "sdpa"),
            "--out",
            str(tmp_path),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["legs"][0]["name"] == "eager" and data["legs"][1]["name"] == "sdpa"
    summary = (tmp_path / "summary.md").read_text()
    assert "## Families" in summary and "attention" in summary
    pictures = list(tmp_path.glob("diff.*"))
    assert pictures and pictures[0].stat().st_size > 1000


def test_cli_diff_of_a_missing_path_is_a_user_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["profile", "diff", str(tmp_path / "no"), str(H200 / "sdpa")])
    assert res.exit_code == 1
    assert "no such trace file or directory" in res.output


def test_cli_diff_of_a_profile_run_directory(tmp_path: Path) -> None:
    import shutil

    from vllmdiag.jobs.profile.capture import Backend, CaptureResult
    from vllmdiag.jobs.profile.results import ProfileRun, write_run

    caps = []
    for name in ("eager", "graph"):
        dest = tmp_path / name / "torch"
        shutil.copytree(H200 / name, dest)
        caps.append(CaptureResult(name, Backend.TORCH, True, dest, ("trace.json.gz",), None,
                                  1.0, dest / "capture.log"))  # fmt: skip
    why = "no nsys on PATH or in the leg"
    nsys_dir = tmp_path / "graph" / "nsys"
    caps.append(CaptureResult("graph", Backend.NSYS, False, nsys_dir, (), why, 0.0,
                              nsys_dir / "log"))  # fmt: skip
    write_run(ProfileRun(tmp_path, tuple(caps)))
    res = CliRunner().invoke(app, ["profile", "diff", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [leg_["name"] for leg_ in data["legs"]] == ["eager", "graph"]
    assert (tmp_path / "diff" / "summary.md").exists()


def test_issue_spelling_of_multi_value_options() -> None:
    from vllmdiag.cli.profile_cmd import _expand_multi

    args = ["r.yaml", "--legs", "a", "b", "-c", "torch", "py-spy", "--top", "3"]
    assert _expand_multi(args) == [
        "r.yaml", "--legs", "a", "--legs", "b", "-c", "torch", "-c", "py-spy", "--top", "3",
    ]  # fmt: skip
    # a script's own arguments after -- are left alone
    assert _expand_multi(["capture", "--", "--legs", "x", "y"]) == [
        "capture", "--", "--legs", "x", "y",
    ]  # fmt: skip
