"""The verdict over a run's cells: the pass/fail rule (:mod:`vllmdiag.model.verdict`) or,
for a metric matrix, the metric rule (:mod:`vllmdiag.model.metric_verdict`). Pure.

Pass/fail matrices: an arm is *sufficient* if it flips every workload the baseline fails,
*partial* if some, *ruled out* if none, *error* if its cells gave no usable result
(the leg did not build, vllmdiag itself failed, the workload took another shape),
*inert* if it did not take effect (so it proves nothing). Controls are reported apart.
Metric matrices: per arm the median over repeats, the spread, the ratio to baseline, and
"no difference detected" when the ratio lies inside the noise band measured from the run
itself (:mod:`vllmdiag.model.noise`); with no evidence of spread nothing is called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from vllmdiag.model.metric_verdict import decide_metric
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.verdict import ArmInfo, MetricInfo, Verdict, _decide_pass_fail


def decide(
    arms: Sequence[ArmInfo],
    workloads: Sequence[str],
    results: Sequence[CellResult],
    *,
    metrics: Mapping[str, MetricInfo] | None = None,
    target: str | None = None,
    inert: Mapping[str, str] | None = None,
) -> Verdict:
    """The verdict over ``results``. ``metrics`` (workload → primary metric) makes it a
    metric matrix; ``inert`` maps arm names to why they did not take effect. Cells that
    were never run (``skipped``, an interrupted run) make the verdict partial: their arms
    are *not run*, never *error*, and nothing is concluded from their absence."""
    by: dict[tuple[str, str], list[CellResult]] = {}
    for r in results:
        by.setdefault((r.arm, r.workload), []).append(r)
    skipped = sum(r.outcome is Outcome.SKIPPED for r in results)
    if metrics:
        verdict = decide_metric(arms, workloads, by, metrics, target, inert or {})
    else:
        verdict = _decide_pass_fail(arms, workloads, by, inert or {})
    if not skipped:
        return verdict
    head = (
        f"Partial run: {skipped} of {len(results)} cells were not run (the run was "
        "interrupted; resume it to finish)."
    )
    return replace(verdict, partial=True, summary=f"{head} {verdict.summary}")
