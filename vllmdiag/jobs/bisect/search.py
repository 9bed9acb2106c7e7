"""Release bisection over an ordered list of versions, pure.

Three verdicts (good, bad, skip) as in ``git bisect run``; both endpoints are checked
first (a "good" end that fails is an error, not a result); skipped versions are stepped
around (the next candidate is the untested one nearest the middle); verdicts the caller
already knows (a journal) are reused, not re-run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from vllmdiag.errors import VllmdiagError


class StepVerdict(str, Enum):
    """What one bisect step found: the check passed (good), failed (bad), or could not
    tell (skip)."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


def verdict_for_rc(rc: int | None) -> StepVerdict:
    """git-bisect-run rules: 0 good, 125 skip, anything else (incl. a timeout) bad."""
    if rc == 0:
        return StepVerdict.GOOD
    if rc == 125:
        return StepVerdict.SKIP
    return StepVerdict.BAD


def majority(votes: Sequence[StepVerdict]) -> StepVerdict:
    """The verdict most repeats agree on; a tie (or nothing) is a skip."""
    if not votes:
        return StepVerdict.SKIP
    ranked = Counter(votes).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return StepVerdict.SKIP
    return ranked[0][0]


def metric_verdict(value: float, baseline: float, threshold: float) -> StepVerdict:
    """A performance check: ``ratio = value / baseline``. A threshold below 1 is for a
    higher-is-better metric (bad when the ratio falls below it), above 1 for a
    lower-is-better one (bad when the ratio rises above it)."""
    if baseline == 0:
        return StepVerdict.SKIP
    ratio = value / baseline
    if threshold <= 1:
        return StepVerdict.GOOD if ratio >= threshold else StepVerdict.BAD
    return StepVerdict.GOOD if ratio <= threshold else StepVerdict.BAD


@dataclass(frozen=True)
class Bracket:
    """``last_good``/``first_bad`` are positions; ``untested`` lie between them (skipped
    or unreachable), so the change is somewhere in ``last_good+1 .. first_bad``."""

    last_good: int
    first_bad: int
    skipped: tuple[int, ...]

    @property
    def exact(self) -> bool:
        return self.first_bad - self.last_good == 1


def next_candidate(n: int, verdicts: Mapping[int, StepVerdict]) -> int | None:
    """The next position to check, or None when the change is pinned down."""
    lo, hi = _ends(n, verdicts)
    open_ = [i for i in range(lo + 1, hi) if i not in verdicts]
    if not open_:
        return None
    mid = (lo + hi) / 2
    return min(open_, key=lambda i: (abs(i - mid), i))


def _ends(n: int, verdicts: Mapping[int, StepVerdict]) -> tuple[int, int]:
    bads = [i for i, v in verdicts.items() if v is StepVerdict.BAD]
    hi = min(bads, default=n - 1)
    goods = [i for i, v in verdicts.items() if v is StepVerdict.GOOD and i < hi]
    lo = max(goods, default=0)
    return lo, hi


def bracket(n: int, verdicts: Mapping[int, StepVerdict]) -> Bracket:
    lo, hi = _ends(n, verdicts)
    return Bracket(
        lo, hi, tuple(i for i in range(lo + 1, hi) if verdicts.get(i) is StepVerdict.SKIP)
    )


def bisect_positions(
    n: int, check: Callable[[int], StepVerdict]
) -> tuple[Bracket, dict[int, StepVerdict]]:
    """Check both ends, then bisect. ``check`` may answer from a journal."""
    if n < 2:
        raise VllmdiagError(
            "need at least two versions to bisect",
            hint="--good and --bad must name different versions",
        )
    verdicts: dict[int, StepVerdict] = {}
    for pos, want in ((0, StepVerdict.GOOD), (n - 1, StepVerdict.BAD)):
        got = check(pos)
        verdicts[pos] = got
        if got is StepVerdict.BAD and pos == 0 and check(n - 1) is StepVerdict.GOOD:
            raise SwappedEnds()
        if got is not want:
            raise EndpointError(pos, want, got)
    while (step := next_candidate(n, verdicts)) is not None:
        verdicts[step] = check(step)
    return bracket(n, verdicts), verdicts


class EndpointError(VllmdiagError):
    """An endpoint's check disagreed with what the user said it was: ``end`` is what it
    should have checked (GOOD for ``--good``, BAD for ``--bad``), ``got`` what it did."""

    def __init__(self, position: int, end: StepVerdict, got: StepVerdict) -> None:
        end_name = end.value
        super().__init__(
            f"the --{end_name} version checks {got.value}, not {end_name}",
            hint=f"check the --{end_name} version and the check command; a {end_name} end "
            f"that does not check {end_name} leaves nothing to bisect",
        )
        self.position = position
        self.end = end
        self.got = got


class SwappedEnds(EndpointError):
    """The --good end checks bad and the --bad end good: they were given the wrong way
    round."""

    def __init__(self) -> None:
        super().__init__(0, StepVerdict.GOOD, StepVerdict.BAD)
        self.message = "the --good version checks bad and the --bad version checks good"
        self.hint = "swap them: the two ends look the wrong way round"
