"""Release bisection: the first release of a package between a good and a bad one that
breaks a check (a command, or a recipe's cell), ``git bisect run`` rules, journaled so an
interrupted bisect resumes.

    result = bisect_releases(BisectRequest("packaging", "21.0", "23.0", ("python", ...)))
"""

from vllmdiag.jobs.bisect.command_check import read_metric
from vllmdiag.jobs.bisect.events import BisectEvent, CandidatesListed, StepFinished, StepStarted
from vllmdiag.jobs.bisect.request import BisectRequest
from vllmdiag.jobs.bisect.results import BisectResult, Step
from vllmdiag.jobs.bisect.run import bisect_releases
from vllmdiag.jobs.bisect.search import (
    EndpointError,
    StepVerdict,
    bisect_positions,
    majority,
    metric_verdict,
    verdict_for_rc,
)

__all__ = [
    "BisectEvent",
    "BisectRequest",
    "BisectResult",
    "CandidatesListed",
    "EndpointError",
    "Step",
    "StepFinished",
    "StepStarted",
    "StepVerdict",
    "bisect_positions",
    "bisect_releases",
    "majority",
    "metric_verdict",
    "read_metric",
    "verdict_for_rc",
]
