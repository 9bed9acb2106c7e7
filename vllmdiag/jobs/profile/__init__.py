"""The profile job: one workload captured on two sides, and the diff that says where the
time went. This is its public surface (what the CLI uses); names load on first use, so
the CLI starts without the capture machinery.

The trace readers are :mod:`vllmdiag.readers.traces`: :mod:`~vllmdiag.readers.traces.jsonstream`
and :mod:`~vllmdiag.readers.traces.kineto` (torch profiler traces),
:mod:`~vllmdiag.readers.traces.nsys` (SQLite exports) and
:mod:`~vllmdiag.readers.traces.pyspy` stream a capture into a
:mod:`~vllmdiag.readers.traces.timeline`, which keeps a few numbers per GPU activity,
joins each to the op that launched it (``ops``) and refuses bad events by reason;
``spans`` does its interval arithmetic and ``phases`` reads vLLM's step names;
``cxxnames`` and ``families`` name and group kernels; ``leg`` merges a side's files.

Comparing, pure: :mod:`vllmdiag.jobs.profile.diff`: ``time_diff`` with ``pairing``
(kernel and op rows) and ``reconcile`` (warnings and the paragraph); ``report`` is what
``diff.json`` and ``--json`` hold; ``render`` writes ``summary.md`` and a picture;
``captures`` diffs two captures; ``steptimes`` judges the step-time change.

Capturing: :mod:`capture` says how a backend runs a workload (vLLM's own profiler
switched on through :mod:`vllm_probe` / :mod:`vllm_flags`), :mod:`capture_executor`
runs it as a cell; :mod:`sides` takes a recipe's two sides from the plan layer,
:mod:`recipe_run` runs them through the cell runner, :mod:`run` captures on existing
environments without a recipe. Both emit :mod:`events` into the run directory's
``run.jsonl``, end in :mod:`outcome` and write :mod:`results` (``profile.json``);
:mod:`diff_command` is ``vllmdiag profile diff``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

#: Public name → the module that defines it.
_EXPORTS = {
    "Backend": "vllmdiag.jobs.profile.capture",
    "CaptureResult": "vllmdiag.jobs.profile.capture",
    "CaptureSettings": "vllmdiag.jobs.profile.capture",
    "backend": "vllmdiag.jobs.profile.capture",
    "Workload": "vllmdiag.jobs.profile.capture_executor",
    "CaptureFallback": "vllmdiag.jobs.profile.events",
    "CaptureFinished": "vllmdiag.jobs.profile.events",
    "CaptureStarted": "vllmdiag.jobs.profile.events",
    "ProfileEvent": "vllmdiag.jobs.profile.events",
    "ProfileStarted": "vllmdiag.jobs.profile.events",
    "ProfileOutcome": "vllmdiag.jobs.profile.results",
    "ProfileRun": "vllmdiag.jobs.profile.results",
    "load_run": "vllmdiag.jobs.profile.results",
    "ProfileRequest": "vllmdiag.jobs.profile.recipe_run",
    "profile_recipe": "vllmdiag.jobs.profile.recipe_run",
    "capture_legs": "vllmdiag.jobs.profile.run",
    "targets_from_paths": "vllmdiag.jobs.profile.run",
    "diff_inputs": "vllmdiag.jobs.profile.diff_command",
    "diff_run": "vllmdiag.jobs.profile.diff_command",
    "CpuDiff": "vllmdiag.jobs.profile.diff.report",
    "DiffReport": "vllmdiag.jobs.profile.diff.report",
    "GpuDiff": "vllmdiag.jobs.profile.diff.report",
    "Spread": "vllmdiag.jobs.profile.diff.steptimes",
    "FrameRow": "vllmdiag.readers.traces.pyspy",
}

__all__ = [
    "Backend",
    "CaptureFallback",
    "CaptureFinished",
    "CaptureResult",
    "CaptureSettings",
    "CaptureStarted",
    "CpuDiff",
    "DiffReport",
    "FrameRow",
    "GpuDiff",
    "ProfileEvent",
    "ProfileOutcome",
    "ProfileRequest",
    "ProfileRun",
    "ProfileStarted",
    "Spread",
    "Workload",
    "backend",
    "capture_legs",
    "diff_inputs",
    "diff_run",
    "load_run",
    "profile_recipe",
    "targets_from_paths",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from vllmdiag.jobs.profile.capture import Backend, CaptureResult, CaptureSettings, backend
    from vllmdiag.jobs.profile.capture_executor import Workload
    from vllmdiag.jobs.profile.diff.report import CpuDiff, DiffReport, GpuDiff
    from vllmdiag.jobs.profile.diff.steptimes import Spread
    from vllmdiag.jobs.profile.diff_command import diff_inputs, diff_run
    from vllmdiag.jobs.profile.events import (
        CaptureFallback,
        CaptureFinished,
        CaptureStarted,
        ProfileEvent,
        ProfileStarted,
    )
    from vllmdiag.jobs.profile.recipe_run import ProfileRequest, profile_recipe
    from vllmdiag.jobs.profile.results import ProfileOutcome, ProfileRun, load_run
    from vllmdiag.jobs.profile.run import capture_legs, targets_from_paths
    from vllmdiag.readers.traces.pyspy import FrameRow
