"""The boundary search against fake oracles: the truth is known, the probes are counted."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest

from vllmdiag.jobs.window import ProbeStatus
from vllmdiag.jobs.window.search import sample_positions, search

P, A, M, X, E = (
    ProbeStatus.PRESENT,
    ProbeStatus.ABSENT,
    ProbeStatus.MODULE_MISSING,
    ProbeStatus.INSTALL_FAILED,
    ProbeStatus.IMPORT_ERROR,
)


class Oracle:
    def __init__(self, truth: Sequence[ProbeStatus]) -> None:
        self.truth = list(truth)
        self.asked: list[int] = []
        self.batches: list[list[int]] = []

    def __call__(self, positions: Sequence[int]) -> Mapping[int, ProbeStatus]:
        assert len(set(positions)) == len(positions), "a batch asks a position twice"
        assert not set(positions) & set(self.asked), "a position was probed twice"
        self.asked += positions
        self.batches.append(list(positions))
        return {i: self.truth[i] for i in positions}


def decided(status: ProbeStatus) -> bool | None:
    return status.has_symbol


def test_one_boundary_found_with_few_probes_and_both_sides_probed() -> None:
    truth = [P] * 14 + [A] * 9  # the cutlass shape: 4.2.0..4.5.3 then 4.6.0..4.8.1
    oracle = Oracle(truth)
    res = search(len(truth), oracle)
    assert [r.status for r in res.rows] == truth
    assert {13, 14} <= set(oracle.asked)  # both sides of the boundary import-probed
    assert res.probes == len(oracle.asked) < len(truth) // 2
    (b,) = res.boundaries
    assert (b.before, b.after, b.appears, b.verified) == (13, 14, False, True)
    (w,) = res.windows
    assert (w.first, w.last, w.end) == (0, 13, 14)
    inferred = [r for r in res.rows if not r.probed]
    assert inferred and all(r.status in (P, A) for r in inferred)


def test_symbol_appearing_later_gives_an_open_ended_window() -> None:
    truth = [M] * 5 + [A] * 3 + [P] * 10
    res = search(len(truth), Oracle(truth))
    assert [decided(r.status) for r in res.rows] == [decided(s) for s in truth]
    (w,) = res.windows
    assert (w.first, w.end) == (8, None)
    # Inferred rows between two module-missing probes say module-missing, not absent.
    assert [r.status for r in res.rows[:5]] == [M] * 5
    assert not all(r.probed for r in res.rows[:5])


def test_interior_window_between_absent_ends_is_found() -> None:
    truth = [A] * 8 + [P] * 6 + [A] * 8
    oracle = Oracle(truth)
    res = search(len(truth), oracle)
    assert [r.status for r in res.rows] == truth
    (w,) = res.windows
    assert (w.first, w.last, w.end) == (8, 13, 14)
    assert {7, 8, 13, 14} <= set(oracle.asked)
    assert len(res.boundaries) == 2 and all(b.verified for b in res.boundaries)


@pytest.mark.parametrize("n", range(1, 13))
def test_every_window_that_a_sample_touches_is_exact(n: int) -> None:
    samples = set(sample_positions(n, 3)) | {0, n - 1}
    for first in range(n):
        for last in range(first, n):
            if not samples & set(range(first, last + 1)):
                continue  # too narrow to be seen between samples: documented limit
            truth = [P if first <= i <= last else A for i in range(n)]
            res = search(n, Oracle(truth))
            assert [r.status for r in res.rows] == truth, (n, first, last)


def test_install_failure_at_the_boundary_is_stepped_around() -> None:
    truth = [P] * 10 + [X] + [A] * 9
    oracle = Oracle(truth)
    res = search(len(truth), oracle)
    assert 10 in oracle.asked and 9 in oracle.asked and 11 in oracle.asked
    assert res.rows[10].status is X and res.rows[10].probed
    (b,) = res.boundaries
    assert (b.before, b.after, b.verified) == (9, 11, False)  # cannot pin it to one release
    (w,) = res.windows
    assert (w.first, w.last, w.end) == (0, 9, 10)  # the safe bound stops at the unknown


def test_import_errors_never_count_as_absent() -> None:
    truth = [P, P, E, P, P, A, A]
    res = search(len(truth), Oracle(truth))
    assert res.rows[2].status is E or not res.rows[2].probed
    assert all(r.status is not A for r in res.rows[:5])
    (w,) = res.windows
    assert (w.first, w.last, w.end) == (0, 4, 5)


def test_single_version_and_empty_range() -> None:
    one = Oracle([P])
    res = search(1, one)
    assert one.asked == [0] and [r.status for r in res.rows] == [P]
    assert [(w.first, w.end) for w in res.windows] == [(0, None)]
    empty = search(0, Oracle([]))
    assert empty.rows == () and empty.windows == () and empty.probes == 0


def test_nothing_has_the_symbol() -> None:
    truth = [A] * 11
    res = search(len(truth), Oracle(truth))
    assert res.windows == () and res.boundaries == ()
    assert res.probes == 5  # the ends and three samples; nothing to bisect


def test_scan_probes_everything_in_one_batch() -> None:
    truth = [A, P, A, P, A]  # more than two changes: only a scan sees all of them
    oracle = Oracle(truth)
    res = search(len(truth), oracle, scan=True)
    assert oracle.batches == [[0, 1, 2, 3, 4]]
    assert all(r.probed for r in res.rows)
    assert [(w.first, w.end) for w in res.windows] == [(1, 2), (3, 4)]


def test_first_round_is_one_parallel_batch() -> None:
    oracle = Oracle([P] * 20 + [A] * 20)
    search(40, oracle)
    assert len(oracle.batches[0]) == 5  # the ends and three interior samples together


def test_correct_static_answers_leave_only_the_change_to_import() -> None:
    truth = [P] * 14 + [A] * 9
    static: list[bool | None] = [s is P for s in truth]
    oracle = Oracle(truth)
    res = search(len(truth), oracle, static=static)
    assert [r.status for r in res.rows] == truth
    assert oracle.batches == [[13, 14]]  # both sides of the change, at once
    assert [r.index for r in res.rows if r.probed] == [13, 14]
    assert all(r.static for r in res.rows if not r.probed)
    (b,) = res.boundaries
    assert (b.before, b.after, b.verified) == (13, 14, True)
    assert res.static_overruled == ()


def test_a_wrong_static_answer_is_overruled_never_kept() -> None:
    truth = [P] * 14 + [A] * 9
    static: list[bool | None] = [True] * 5 + [False] * 18  # predicts the change at 5
    oracle = Oracle(truth)
    res = search(len(truth), oracle, static=static)
    assert [r.status for r in res.rows] == truth
    assert {13, 14} <= set(oracle.asked)
    assert res.static_overruled  # the import at 4 or 5 contradicted it
    assert not any(r.static for r in res.rows)  # every static answer set aside
    assert all(b.verified for b in res.boundaries)


def test_undecided_static_answers_are_imported_where_the_answer_depends_on_them() -> None:
    truth = [P] * 10 + [A] * 10
    static: list[bool | None] = [s is P for s in truth]
    for i in (8, 9, 10, 11):  # the change lies among versions the read could not decide
        static[i] = None
    oracle = Oracle(truth)
    res = search(len(truth), oracle, static=static)
    assert [r.status for r in res.rows] == truth
    assert {9, 10} <= set(oracle.asked)
    assert set(oracle.asked) <= {8, 9, 10, 11}  # nothing the static read decided
    (b,) = res.boundaries
    assert (b.before, b.after, b.verified) == (9, 10, True)


def test_static_answers_with_no_change_still_import_the_newest() -> None:
    truth = [A] * 9
    oracle = Oracle(truth)
    res = search(len(truth), oracle, static=[False] * 9)
    assert oracle.asked == [8]
    assert res.windows == () and [r.status for r in res.rows] == truth


def test_an_install_failure_at_a_static_change_moves_the_check_outward() -> None:
    truth = [P] * 6 + [X] + [A] * 6
    static: list[bool | None] = [True] * 6 + [False] * 7  # the read says 6 lacks it
    oracle = Oracle(truth)
    res = search(len(truth), oracle, static=static)
    assert res.rows[6].status is X and res.rows[6].probed
    assert {5, 6, 7} <= set(oracle.asked)
    (b,) = res.boundaries
    assert (b.before, b.after, b.verified) == (5, 7, False)  # cannot pin it to one release
    assert res.static_overruled == ()  # an install failure contradicts nothing


def test_scan_ignores_static_answers() -> None:
    truth = [P, A, P]
    oracle = Oracle(truth)
    res = search(3, oracle, scan=True, static=[True, True, True])
    assert oracle.batches == [[0, 1, 2]] and [r.status for r in res.rows] == truth


def test_random_truths_with_partly_undecided_static_answers() -> None:
    """Whatever the read leaves undecided, every change is found and import-checked on
    both sides, as long as each run of equal versions has one decided version."""
    rng = random.Random(20261201)
    for _ in range(400):
        n = rng.randint(1, 25)
        a, b = sorted(rng.sample(range(n + 1), 2)) if n > 1 else (0, n)
        inside = rng.random() < 0.5
        truth = [P if (a <= i < b) == inside else A for i in range(n)]
        static: list[bool | None] = [s is P if rng.random() < 0.6 else None for s in truth]
        for start, end in _runs(truth):  # one decided version in each run
            if all(static[i] is None for i in range(start, end)):
                pick = rng.randrange(start, end)
                static[pick] = truth[pick] is P
        oracle = Oracle(truth)
        res = search(n, oracle, static=static)
        assert [r.status for r in res.rows] == truth, (truth, static)
        for i in range(n - 1):
            if truth[i] != truth[i + 1]:
                assert {i, i + 1} <= set(oracle.asked), (truth, static, oracle.asked)
        assert set(oracle.asked) <= {i for i, s in enumerate(static) if s is None} | {
            j for i in range(n - 1) if truth[i] != truth[i + 1] for j in (i, i + 1)
        } | ({n - 1} if len(set(truth)) == 1 else set())


def _runs(truth: Sequence[ProbeStatus]) -> list[tuple[int, int]]:
    out, start = [], 0
    for i in range(1, len(truth) + 1):
        if i == len(truth) or truth[i] != truth[start]:
            out.append((start, i))
            start = i
    return out
