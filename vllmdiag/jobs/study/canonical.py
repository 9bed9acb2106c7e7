"""Canonical values: every run of a (leg, model, workload) measured under the study's
current settings counts, pooled. A pure function over every result in a study directory.

A run is one batch's cells of a slot (one per repeat). The rule, as ``CANONICAL.md``
states it, is :data:`RULE`. Two batches under the same settings are two samples of one
measurement: keeping only the latest would hide how far they disagree (the H200 study
measured 62,313 and then 89,145 tok/s under identical settings), so both count, and the
tables show the spread and flag the value "unstable" when it exceeds the 5 % band.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vllmdiag.jobs.study.measured import (
    Choice,
    Excluded,
    Expected,
    Measured,
    RunRef,
    Standing,
    differences,
)
from vllmdiag.jobs.study.plan import Slot
from vllmdiag.model.outcome import Outcome

RULE = (
    "A run is one batch's cells of a (leg, model, workload), one per repeat. A run counts "
    "only if (1) the study's recipe still has that (leg, model, workload); (2) its leg was "
    "clean in that batch (no contamination found by the hygiene check); (3) every cell was "
    "measured under the study's current settings: the same leg, installed the same (the "
    "same lock hash: every package at the same version), the same command (model, "
    "tensor-parallel size, flags, workload shape; the run directory and the leg's "
    "interpreter aside) and the same environment overlay; (4) it passed: every repeat it "
    "ran passed. A (leg, model, workload) has a value once one such run has at least as "
    "many repeats as the study asks; then every run that counts is pooled (an interrupted "
    "one too): the value is the median over all their cells, shown with its spread "
    "(± half of max/min-1) and n, and flagged unstable when max/min-1 exceeds the 5 % "
    "band. The latest complete run is the reference run (its cells are linked). Every run "
    "that does not count is listed with why. A resumed batch reuses a cell only when its "
    "settings are the same, so no run measured under other settings is ever counted."
)


@dataclass(frozen=True)
class Selection:
    """Every study slot's choice, in table order, and the runs of slots the study no
    longer has (``strays``: all excluded)."""

    rule: str
    choices: tuple[Choice, ...]
    strays: tuple[Choice, ...] = ()

    def choice(self, slot: Slot) -> Choice | None:
        for c in self.choices:
            if c.slot == slot:
                return c
        return None


def select(
    measured: Sequence[Measured],
    expected: Mapping[Slot, Expected],
    *,
    repeats: int,
    skipped: Mapping[Slot, str] | None = None,
    freezes: Mapping[str, tuple[str, ...]] | None = None,
    batch_order: Sequence[str] = (),
) -> Selection:
    """``expected``: the study's slots (in table order) and their current settings;
    ``skipped``: slots the study does not run, and why; ``batch_order``: batches oldest
    first (breaks a tie of finish times)."""
    skipped = skipped or {}
    order = {name: i for i, name in enumerate(batch_order)}
    runs: dict[Slot, dict[str, list[Measured]]] = {}
    for m in measured:
        runs.setdefault(m.slot, {}).setdefault(m.batch, []).append(m)
    choices = []
    for slot, want in expected.items():
        found = runs.get(slot, {})
        choices.append(_choose(slot, want, found, repeats, skipped.get(slot), freezes, order))
    strays = []
    for slot in sorted(set(runs) - set(expected)):
        excluded = tuple(
            Excluded(
                _ref(batch, cells),
                Standing.NOT_IN_STUDY,
                "the study's recipe no longer has this (leg, model, workload)",
            )
            for batch, cells in _by_time(runs[slot], order)
        )
        strays.append(Choice(slot, None, {}, {}, "not in the study", excluded))
    return Selection(RULE, tuple(choices), tuple(strays))


def _choose(
    slot: Slot,
    want: Expected,
    found: Mapping[str, list[Measured]],
    repeats: int,
    skip: str | None,
    freezes: Mapping[str, tuple[str, ...]] | None,
    order: Mapping[str, int],
) -> Choice:
    judged: list[tuple[RunRef, Standing | None, str, list[Measured]]] = []
    for batch, cells in _by_time(found, order):
        status, reason = _judge(cells, want, repeats, skip, freezes)
        judged.append((_ref(batch, cells), status, reason, cells))
    complete = [j for j in judged if j[1] is None]
    if not complete:
        excluded = tuple(Excluded(ref, st, why) for ref, st, why, _ in judged if st is not None)
        return Choice(slot, None, {}, {}, _missing(judged, skip), excluded, _outcome(judged))
    # An interrupted run that passed what it ran is evidence too, once one run is whole.
    pools = (None, Standing.INCOMPLETE)
    counted = [j for j in judged if j[1] in pools]
    excluded = tuple(Excluded(ref, st, why) for ref, st, why, _ in judged if st not in pools)
    values, per_repeat, origins = _values(counted)
    return Choice(
        slot,
        complete[-1][0],
        values,
        per_repeat,
        None,
        excluded,
        pooled=tuple(j[0] for j in counted),
        origins=origins,
    )


def _judge(
    cells: list[Measured],
    want: Expected,
    repeats: int,
    skip: str | None,
    freezes: Mapping[str, tuple[str, ...]] | None,
) -> tuple[Standing | None, str]:
    failed = [c for c in cells if c.outcome is not Outcome.PASS]
    failure = _failure(failed[0]) if failed else ""
    if skip is not None:
        return Standing.NOT_IN_STUDY, f"the study skips it on this leg: {skip}"
    dirty = sorted({f for c in cells for f in c.contaminated})
    if dirty:
        return Standing.CONTAMINATED, "from a contaminated leg: " + "; ".join(dirty)
    # A cell that never started (its leg did not build) has no settings to compare.
    started = [c for c in cells if c.settings.argv]
    diffs = list(dict.fromkeys(d for c in started for d in differences(c.settings, want, freezes)))
    if diffs:
        also = f"; it {failure}" if failure else ""
        return Standing.OTHER_SETTINGS, "measured under other settings: " + "; ".join(diffs) + also
    if failed:
        return Standing.FAILED, failure
    if len(cells) < repeats:
        return Standing.INCOMPLETE, f"incomplete: {len(cells)} of {repeats} repeats"
    return None, ""


def _failure(cell: Measured) -> str:
    said = {
        Outcome.FAIL: "failed",
        Outcome.TIMEOUT: "timed out",
        Outcome.ERROR: "gave no result (error)",
        Outcome.SKIPPED: "was not run",
    }.get(cell.outcome, cell.outcome.value)
    where = f" (repeat {cell.repeat})" if cell.repeat > 1 else ""
    return f"{said}{where}: {cell.why}" if cell.why else f"{said}{where}"


def _missing(
    judged: list[tuple[RunRef, Standing | None, str, list[Measured]]], skip: str | None
) -> str:
    if skip is not None:
        return f"not run: {skip}"
    if not judged:
        return "not run"
    _, status, reason, _ = judged[-1]
    if status is Standing.FAILED:
        return reason
    return f"no run counts; the latest: {reason}"


def _outcome(judged: list[tuple[RunRef, Standing | None, str, list[Measured]]]) -> str | None:
    """The latest current-settings run's outcome that is not a pass (for coverage)."""
    for _, status, _, cells in reversed(judged):
        if status in (Standing.FAILED, Standing.INCOMPLETE):
            bad = [c.outcome for c in cells if c.outcome is not Outcome.PASS]
            return bad[0].value if bad else None
    return None


def _values(
    runs: Sequence[tuple[RunRef, Standing | None, str, list[Measured]]],
) -> tuple[dict[str, float], dict[str, tuple[float, ...]], dict[str, tuple[str, ...]]]:
    """Per metric: the median over every cell of ``runs``, the values (oldest run first,
    then by repeat) and where each came from (``batch/cell``)."""
    per: dict[str, list[float]] = {}
    where: dict[str, list[str]] = {}
    for ref, _, _, cells in runs:
        for c in sorted(cells, key=lambda c: c.repeat):
            for name, value in c.metrics.items():
                per.setdefault(name, []).append(value)
                where.setdefault(name, []).append(f"{ref.batch}/{c.cell}")
    return (
        {k: float(statistics.median(v)) for k, v in per.items()},
        {k: tuple(v) for k, v in per.items()},
        {k: tuple(v) for k, v in where.items()},
    )


def _by_time(
    runs: Mapping[str, list[Measured]], order: Mapping[str, int]
) -> list[tuple[str, list[Measured]]]:
    """Runs oldest first: by when their last cell finished, then batch order."""
    items = [(b, sorted(c, key=lambda m: (m.repeat, m.cell))) for b, c in runs.items()]
    return sorted(items, key=lambda bc: (max(m.finished for m in bc[1]), order.get(bc[0], -1)))


def _ref(batch: str, cells: list[Measured]) -> RunRef:
    return RunRef(batch, tuple(c.cell for c in cells), max(c.finished for c in cells))
