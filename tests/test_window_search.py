"""The boundary search against fake oracles: the truth is known, the probes are counted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from vllmdiag.window.model import Status
from vllmdiag.window.search import sample_positions, search

P, A, M, X, E = (
    Status.PRESENT,
    Status.ABSENT,
    Status.MODULE_MISSING,
    Status.INSTALL_FAILED,
    Status.IMPORT_ERROR,
)


class Oracle:
    def __init__(self, truth: Sequence[Status]) -> None:
        self.truth = list(truth)
        self.asked: list[int] = []
        self.batches: list[list[int]] = []

    def __call__(self, positions: Sequence[int]) -> Mapping[int, Status]:
        assert len(set(positions)) == len(positions), "a batch asks a position twice"
        assert not set(positions) & set(self.asked), "a position was probed twice"
        self.asked += positions
        self.batches.append(list(positions))
        return {i: self.truth[i] for i in positions}


def decided(status: Status) -> bool | None:
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


def test_correct_hints_replace_the_samples() -> None:
    truth = [P] * 14 + [A] * 9
    hints: list[bool | None] = [s is P for s in truth]
    oracle = Oracle(truth)
    res = search(len(truth), oracle, hints=hints)
    assert [r.status for r in res.rows] == truth
    assert sorted(oracle.asked) == [0, 13, 14, 22]  # the ends and both sides of the change


def test_wrong_hints_cost_probes_not_correctness() -> None:
    truth = [P] * 14 + [A] * 9
    hints: list[bool | None] = [True] * 5 + [False] * 18  # predicts the change at 5
    oracle = Oracle(truth)
    res = search(len(truth), oracle, hints=hints)
    assert [r.status for r in res.rows] == truth
    assert {13, 14} <= set(oracle.asked)


def test_sparse_hints_fall_back_to_samples() -> None:
    truth = [A] * 8 + [P] * 6 + [A] * 8
    hints: list[bool | None] = [None] * 22
    hints[0] = False
    oracle = Oracle(truth)
    res = search(len(truth), oracle, hints=hints)
    assert [r.status for r in res.rows] == truth
