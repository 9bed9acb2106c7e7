"""The noise model: the relative spread of same-settings values, the largest group, the
5 % floor, no call without evidence, and the rule's false-call rate checked by
simulation against what the module's docstring states."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from vllmdiag.model.decide import decide
from vllmdiag.model.noise import FLOOR, NoiseEstimate, SpreadGroup, estimate, relative_spread
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.verdict import ArmInfo, Effect, MetricInfo


def test_relative_spread_is_max_over_min_minus_one() -> None:
    assert relative_spread([100.0, 130.0, 110.0]) == pytest.approx(0.3)
    assert relative_spread([7.0]) is None and relative_spread([]) is None
    # not all positive: the range over the median's magnitude
    assert relative_spread([-1.0, 1.0, 0.5]) == pytest.approx(2.0 / 0.5)


def test_the_estimate_is_the_largest_group_and_says_where_it_came_from() -> None:
    n = estimate(
        [
            SpreadGroup("repeats of baseline", (100.0, 104.0, 102.0)),
            SpreadGroup("repeats of arm a", (90.0,)),  # one value: no evidence
            SpreadGroup("A/A pair inert arm b", (100.0, 104.0, 102.0, 125.0)),
        ]
    )
    assert n.value == pytest.approx(0.25) and n.source == "A/A pair inert arm b"
    assert n.groups == 2 and n.sources == ("repeats of baseline", "A/A pair inert arm b")
    assert "25.0%" in n.describe() and "A/A pair inert arm b" in n.describe()
    unknown = estimate([SpreadGroup("repeats of baseline", (100.0,))])
    assert unknown.value is None and unknown.band is None
    assert "--repeats 3" in unknown.describe()


def _oracle(ratio: float, spread: float | None, n: int) -> bool | None:
    """The rule written out the long way: |log ratio| beyond log(1 + band)."""
    if spread is None or n < 2:
        return None
    band = max(spread, FLOOR) * (2 if n == 2 else 1)
    return abs(math.log(ratio)) > math.log(1 + band)


@pytest.mark.parametrize("spread", [None, 0.0, 0.01, 0.049, 0.2, 0.7])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_calls_follow_the_rule(spread: float | None, n: int) -> None:
    est = NoiseEstimate(spread)
    for ratio in (0.4, 0.8, 0.9, 0.94, 0.96, 1.0, 1.04, 1.06, 1.1, 1.3, 2.5):
        assert est.calls(ratio, n) == _oracle(ratio, spread, n), (ratio, spread, n)


def test_the_floor_keeps_a_quiet_run_from_calling_small_differences() -> None:
    quiet = NoiseEstimate(0.001)
    assert quiet.calls(1.04, 3) is False and quiet.calls(1 / 1.04, 3) is False
    assert quiet.calls(1.06, 3) is True


def test_an_a_a_pair_is_never_called_against_its_own_pooled_spread() -> None:
    rng = random.Random(18)
    for _ in range(2000):
        n = rng.randint(1, 5)
        base = tuple(math.exp(rng.gauss(0, 0.3)) for _ in range(n))
        same = tuple(math.exp(rng.gauss(0, 0.3)) for _ in range(n))
        est = estimate([SpreadGroup("A/A", base + same)])
        ratio = statistics.median(same) / statistics.median(base)
        assert est.calls(ratio, n) is not True


def _false_call_rate(n: int, sigma: float, trials: int, rng: random.Random) -> float:
    calls = 0
    for _ in range(trials):
        groups = [tuple(math.exp(rng.gauss(0, sigma)) for _ in range(n)) for _ in range(2)]
        est = estimate([SpreadGroup(str(i), g) for i, g in enumerate(groups)])
        ratio = statistics.median(groups[1]) / statistics.median(groups[0])
        calls += est.calls(ratio, n) is True
    return calls / trials


@pytest.mark.parametrize(("n", "most"), [(2, 0.10), (3, 0.08), (5, 0.01)])
def test_noise_alone_is_rarely_called(n: int, most: float) -> None:
    # the docstring's figures: 6-8 % with 2 (doubled band), 6 % with 3, under 0.5 % with 5
    rate = _false_call_rate(n, 0.2, 4000, random.Random(n))
    assert rate <= most, rate


def _cells(arm: str, values: list[float]) -> list[CellResult]:
    return [
        CellResult(f"r{i}.{arm}.w", arm, "w", i, Outcome.PASS, 0, 1.0, {"tps": v})
        for i, v in enumerate(values, start=1)
    ]


def test_the_issues_inert_arm_is_measured_noise_and_widens_the_band() -> None:
    # The H200 matrix: --moe-backend triton was inert (auto already is TRITON), measured
    # at 1.25x the baseline; another arm at 1.20x.
    arms = [ArmInfo("triton", "flag"), ArmInfo("other", "flag")]
    inert = {"triton": "auto already resolves to TRITON"}
    once = decide(
        arms,
        ["w"],
        _cells("baseline", [1000.0]) + _cells("triton", [1250.0]) + _cells("other", [1200.0]),
        metrics={"w": MetricInfo("tps")},
        inert=inert,
    )
    a = {x.name: x for x in once.arms}
    assert a["triton"].effect is Effect.INERT and "1.25x" in a["triton"].detail
    assert "measured noise (an A/A pair)" in a["triton"].detail
    assert once.noise["w"].value == pytest.approx(0.25)
    assert once.noise["w"].source == "A/A pair inert arm triton"
    assert a["other"].effect is Effect.NOT_CALLED  # one value against one: never called
    thrice = decide(
        arms,
        ["w"],
        _cells("baseline", [1000.0, 1010.0, 990.0])
        + _cells("triton", [1250.0, 1240.0, 1260.0])
        + _cells("other", [1200.0, 1195.0, 1205.0]),
        metrics={"w": MetricInfo("tps")},
        inert=inert,
    )
    other = next(x for x in thrice.arms if x.name == "other")
    # each arm's repeats agree within 2 %, but the A/A pair moved 27 %: 1.20x is noise
    assert other.workloads["w"].difference_detected is False
    assert other.effect is Effect.RULED_OUT and "no difference detected" in other.detail
    assert "Noise on w: 27.3%" in thrice.summary


def test_drift_is_early_against_late_beyond_each_halfs_spread() -> None:
    from vllmdiag.model.noise import drift

    assert drift([100.0]) is None
    held = drift([100.0, 101.0, 99.5, 100.5, 100.2, 99.8])
    assert held is not None and held.drifted is False and "held" in held.describe()
    step = drift([100.0, 100.5, 99.8, 130.0, 131.0, 129.5])
    assert step is not None and step.drifted is True and step.ratio == pytest.approx(1.3, 0.01)
    # a steady climb over two values a half widens each half as much as it moves them
    ramp = drift([100.0, 116.0, 132.0, 148.0])
    assert ramp is not None and ramp.drifted is False
    lone = drift([100.0, 130.0])
    assert lone is not None and lone.drifted is None
