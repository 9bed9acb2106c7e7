"""A profile diff judges its step-time change against the capture's own step-to-step
variation. Read from real H200 captures: vLLM 0.26's own profiler on a tiny llama
(tests/fixtures/vllm026/profile-e2e: CUDA graphs vs --enforce-eager, 12 profiled engine
steps a side) and the torch launcher's 40-step windows (tests/fixtures/traces/h200: eager
attention, SDPA, CUDA graphs; h200-compile: eager vs torch.compile, 12 steps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app
from vllmdiag.jobs.profile.diff import steptimes
from vllmdiag.jobs.profile.diff.steptimes import ALL, PERIOD, STEP, Call, Spread
from vllmdiag.jobs.profile.diff.time_diff import diff
from vllmdiag.readers.traces import leg, phases

FIX = FIXTURES
E2E = FIX / "vllm026" / "profile-e2e"
H200 = FIX / "traces" / "h200"
COMPILE = FIX / "traces" / "h200-compile"


def _rows(a: Path, b: Path) -> dict[tuple[str, str], steptimes.StepBand]:
    d = diff(leg.load(a), leg.load(b))
    return {(r.measure, r.kind): r for r in d.step_bands}


def test_the_vllm_026_e2e_profile_states_its_band() -> None:
    """12 decode steps a side: CUDA graphs 2.67 ms a step period, eager 6.92 ms, each
    side scattering 5-7 % from step to step: +159 % is far beyond that."""
    rows = _rows(E2E / "baseline.pt.trace.json.gz", E2E / "enforce-eager.pt.trace.json.gz")
    assert set(rows) == {(PERIOD, phases.DECODE), (STEP, phases.DECODE)}
    period = rows[(PERIOD, phases.DECODE)]
    assert period.a is not None and period.b is not None
    assert (period.a.n, period.b.n) == (11, 11)  # 12 steps: 11 start-to-start periods
    assert period.a.median_us == pytest.approx(2670, rel=0.01)
    assert period.b.median_us == pytest.approx(6920, rel=0.01)
    assert 0.05 < period.a.relative < 0.08 and 0.04 < period.b.relative < 0.06
    assert period.band == pytest.approx(max(period.a.relative, period.b.relative))
    assert period.call is Call.SLOWER and period.change == pytest.approx(1.595, abs=0.01)
    step = rows[(STEP, phases.DECODE)]
    assert step.call is Call.SLOWER and step.a is not None and step.a.n == 12


def test_a_change_inside_the_floor_or_the_spread_is_not_called() -> None:
    """eager vs torch.compile: the annotated step is +4.3 %, inside the 6.3 % the eager
    side's own steps scatter: not called; its step period (+30 %) is beyond it."""
    rows = _rows(COMPILE / "eager", COMPILE / "compiled")
    step = rows[(STEP, phases.STEP)]
    assert step.call is Call.NONE
    assert step.change == pytest.approx(0.043, abs=0.005)
    assert step.band is not None and step.band > steptimes.FLOOR  # the spread, not the floor
    assert "within" in step.detail and "the step-to-step spread" in step.detail
    assert rows[(PERIOD, phases.STEP)].call is Call.SLOWER
    # SDPA vs eager attention, 40 steps: -14 % beyond a band that is the 5 % floor
    sdpa = _rows(H200 / "eager", H200 / "sdpa")[(STEP, phases.STEP)]
    assert sdpa.call is Call.FASTER and sdpa.band == steptimes.FLOOR
    assert sdpa.a is not None and sdpa.a.n == 40 and sdpa.a.relative < steptimes.FLOOR
    # A/A: a side against itself is never a difference
    same = _rows(H200 / "graph", H200 / "graph")[(STEP, phases.STEP)]
    assert same.call is Call.NONE and same.change == 0


def test_too_few_steps_are_not_judged_and_the_verdict_says_how_to_get_more() -> None:
    few = Spread.of([1000.0, 1010.0, 990.0])
    many = Spread.of([2000.0 + i for i in range(20)])
    row = steptimes.judge(STEP, ALL, few, many, steps_hint=32)
    assert row.call is Call.TOO_FEW and row.band is None
    assert "3 and 20 steps" in row.detail and "--steps 32" in row.detail
    # spread from the median absolute deviation: one outlier does not widen it
    s = Spread.of([100.0] * 9 + [500.0])
    assert s is not None and s.median_us == 100.0 and s.relative == 0.0


def test_the_diff_json_summary_and_paragraph_carry_the_band(tmp_path: Path) -> None:
    args = [str(E2E / "baseline.pt.trace.json.gz"), str(E2E / "enforce-eager.pt.trace.json.gz"),
            "--out", str(tmp_path / "d"), "--json"]  # fmt: skip
    res = CliRunner().invoke(app, ["profile", "diff", *args])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    bands = {(r["measure"], r["kind"]): r for r in d["step_bands"]}
    period = bands[(PERIOD, phases.DECODE)]
    assert period["call"] == "slower" and period["a"]["n"] == 11
    assert "Median decode-only step period:" in d["reconciliation"]
    assert "enforce-eager 6.92 ms ±5.1% (n=11): slower, +159.5% is beyond ±6.6% (the " \
        "step-to-step spread" in d["reconciliation"]  # fmt: skip
    summary = (tmp_path / "d" / "summary.md").read_text()
    assert "## Step times (median ± step-to-step spread)" in summary
    assert "| step period | decode-only | 2.667 ±6.6% (n=11) |" in summary
