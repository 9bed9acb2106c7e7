"""How a job's cells run, as its user asked: one value, declared once.

:class:`RunOptions` is what every job that runs cells (matrix, study, profile) embeds
and passes to :func:`~vllmdiag.spine.runner.run_cells` unchanged; the command line's
defaults are its own (``vllmdiag.cli.run_opts`` builds the options from it). What a job
adds to one call of the runner (its run directory, its record in the journal, how it
shares the node) is a :class:`CellsJob`; what it adds to how they run, its
:class:`~vllmdiag.spine.runner.hooks.CellHooks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vllmdiag.services import proc
from vllmdiag.services.envs.cache import EnvCache
from vllmdiag.spine.runner.executor import Executor, LocalExecutor


@dataclass(frozen=True)
class RunOptions:
    """Where and how cells run. ``runs_root``: where a job makes its new directory when
    it is not named; ``grace_s``: at a timeout or a stop, seconds between TERM and KILL
    of a cell's processes (and of those an earlier run left behind);
    ``allow_contaminated``: run on a leg that fails its hygiene check; ``wait``: queue
    behind another job holding the node lock instead of stopping (for
    :func:`~vllmdiag.spine.measuring.measuring`); ``executor``: this machine, or the
    nodes of a cluster; ``cache``: where legs are built."""

    runs_root: Path = Path("runs")
    grace_s: float = proc.DEFAULT_GRACE_S
    allow_contaminated: bool = False
    wait: bool = False
    executor: Executor = field(default_factory=LocalExecutor)
    cache: EnvCache = field(default_factory=EnvCache)


@dataclass(frozen=True)
class CellsJob:
    """What one job asks of one run of its cells. ``out``: a new run directory (default
    ``RUNS_ROOT/<name>-<UTC>``), or ``resume``: an interrupted run to finish in place;
    ``name``: the run directory's prefix (default: the recipe's name); ``record``: what
    the job adds to the journal's ``run_started`` (its ``job``); ``exclusive``: one cell
    per node at a time, holding all its GPUs (timing runs; a job that only asks pass or
    fail sets it False to share nodes on disjoint GPUs); ``command``: the vllmdiag
    command that resumes the run (for the hints a stopped run prints)."""

    out: Path | None = None
    resume: Path | None = None
    name: str | None = None
    record: dict[str, str] = field(default_factory=dict)
    exclusive: bool = True
    command: str = "matrix"
