"""The options of every command that runs cells (``matrix``, ``study``, ``profile``):
built once here, each default :class:`~vllmdiag.spine.runner.RunOptions`' own, and read
back into one ``RunOptions`` value by :func:`run_options`."""

from __future__ import annotations

from pathlib import Path

import typer

from vllmdiag.cli.values import path_value
from vllmdiag.services.config import numbers
from vllmdiag.spine.runner.options import RunOptions

RunsRootOption = typer.Option(
    RunOptions.runs_root,
    "--runs-root",
    parser=path_value,
    metavar="DIR",
    help="Where a new run (or study) directory is made when --out is not given.",
)
GraceOption = typer.Option(
    RunOptions.grace_s,
    "--grace",
    metavar="SECONDS",
    help="On timeout or Ctrl-C: seconds between TERM and KILL of a cell's processes.",
)
AllowContaminatedOption = typer.Option(
    RunOptions.allow_contaminated,
    "--allow-contaminated",
    help="Run even if a leg fails its hygiene check.",
)
WaitOption = typer.Option(
    RunOptions.wait,
    "--wait",
    help="If another job holds this machine's node lock, wait for it instead of stopping.",
)


def grace_seconds(grace: float) -> float:
    """``--grace``, checked: finite, 0 or more, at most the allowed maximum."""
    return numbers.seconds(grace, "--grace", zero_ok=True, maximum=numbers.MAX_GRACE_S)


def run_options(
    *, runs_root: Path, grace: float, allow_contaminated: bool, wait: bool
) -> RunOptions:
    """The command line's run options as the one value the jobs take (``--grace``
    checked; the executor is chosen apart, see ``executor_opts.connected``)."""
    return RunOptions(
        runs_root=runs_root,
        grace_s=grace_seconds(grace),
        allow_contaminated=allow_contaminated,
        wait=wait,
    )
