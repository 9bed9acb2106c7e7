"""Bisection over fake checks: endpoints first, skips stepped around, flaky checks voted."""

from __future__ import annotations

import contextlib
import itertools
import random
from collections.abc import Callable

import pytest

from vllmdiag.jobs.bisect import (
    EndpointError,
    StepVerdict,
    bisect_positions,
    majority,
    metric_verdict,
    read_metric,
    verdict_for_rc,
)
from vllmdiag.jobs.bisect.search import next_candidate

G, B, S = StepVerdict.GOOD, StepVerdict.BAD, StepVerdict.SKIP


class Check:
    def __init__(self, truth: list[StepVerdict]) -> None:
        self.truth = truth
        self.calls: list[int] = []

    def __call__(self, pos: int) -> StepVerdict:
        self.calls.append(pos)
        return self.truth[pos]


@pytest.mark.parametrize("n", range(2, 40))
def test_one_boundary_found_at_every_position_in_log_steps(n: int) -> None:
    for first_bad in range(1, n):
        check = Check([G] * first_bad + [B] * (n - first_bad))
        out, _ = bisect_positions(n, check)
        assert (out.last_good, out.first_bad, out.exact) == (first_bad - 1, first_bad, True)
        assert check.calls[:2] == [0, n - 1]  # endpoints first
        assert len(check.calls) == len(set(check.calls))  # nothing checked twice
        assert len(check.calls) <= 2 + (n - 2).bit_length()


def test_skips_are_stepped_around() -> None:
    truth = [G, G, G, S, S, B, B, B]
    out, _ = bisect_positions(len(truth), Check(truth))
    assert (out.last_good, out.first_bad) == (2, 5)
    assert out.skipped == (3, 4) and not out.exact


def test_skip_next_to_the_change_still_pins_it() -> None:
    truth = [G, G, S, G, B, B, B, B, B]
    out, _ = bisect_positions(len(truth), Check(truth))
    assert (out.last_good, out.first_bad, out.exact) == (3, 4, True)


def test_good_end_that_fails_is_an_error_not_a_result() -> None:
    with pytest.raises(EndpointError) as err:
        bisect_positions(4, Check([B, B, B, B]))
    assert err.value.end is G and "--good version checks bad" in err.value.message
    with pytest.raises(EndpointError) as err2:
        bisect_positions(4, Check([G, G, G, S]))
    assert err2.value.end is B and "--bad version checks skip" in err2.value.message


def test_two_versions_need_only_the_endpoints() -> None:
    check = Check([G, B])
    out, _ = bisect_positions(2, check)
    assert check.calls == [0, 1] and (out.last_good, out.first_bad) == (0, 1)


def test_flaky_check_with_majority_of_repeats() -> None:
    rng = random.Random(7)
    n, first_bad = 30, 17

    def flaky(repeats: int) -> Callable[[int], StepVerdict]:
        def check(pos: int) -> StepVerdict:
            truth = G if pos < first_bad else B
            wrong = B if truth is G else G
            # Each run lies one time in ten; the repeats are put to a majority vote.
            return majority([wrong if rng.random() < 0.1 else truth for _ in range(repeats)])

        return check

    def hits(repeats: int) -> int:
        right = 0
        for _ in range(100):
            # A lying endpoint raises: reported as an error, never as a result.
            with contextlib.suppress(EndpointError):
                right += bisect_positions(n, flaky(repeats))[0].first_bad == first_bad
        return right

    single, voted = hits(1), hits(5)
    assert voted >= 85
    assert single < voted - 20


def test_majority_ties_skip() -> None:
    assert majority([G, B, G]) is G
    assert majority([G, B]) is S
    assert majority([]) is S
    assert majority([S, S, B]) is S


def test_rc_rules_of_git_bisect_run() -> None:
    assert [verdict_for_rc(rc) for rc in (0, 1, 125, 127, None)] == [G, B, S, B, B]


def test_metric_thresholds_both_directions() -> None:
    assert metric_verdict(95.0, 100.0, 0.9) is G  # throughput: 0.95 >= 0.9
    assert metric_verdict(70.0, 100.0, 0.9) is B
    assert metric_verdict(105.0, 100.0, 1.1) is G  # latency: 1.05 <= 1.1
    assert metric_verdict(130.0, 100.0, 1.1) is B
    assert metric_verdict(1.0, 0.0, 0.9) is S


def test_next_candidate_respects_known_verdicts() -> None:
    assert next_candidate(9, {0: G, 8: B}) == 4
    assert next_candidate(9, {0: G, 8: B, 4: S}) in (3, 5)
    assert next_candidate(3, {0: G, 1: G, 2: B}) is None
    for n in range(2, 8):
        for combo in itertools.product([G, B, S], repeat=n - 2):
            verdicts = {0: G, n - 1: B, **{i + 1: v for i, v in enumerate(combo)}}
            assert next_candidate(n, verdicts) is None


def test_read_metric_forms() -> None:
    out = 'warmup\nthroughput=10.5\n{"throughput": 12.0, "p50": 3}\nthroughput: 1.5e2\n'
    assert read_metric(out, "throughput") == 150.0
    assert read_metric('{"p50": 3}', "p50") == 3.0
    assert read_metric("no numbers here", "throughput") is None
    assert read_metric("mythroughput=4", "throughput") is None
