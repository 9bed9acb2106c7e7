"""A planned leg and a planned cell: what a dry-run shows of each, before anything runs
(a matrix's in :mod:`vllmdiag.jobs.matrix.matrix_plan`, a study's in
:mod:`vllmdiag.jobs.study.study_plan`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.plan import cells as planmod
from vllmdiag.plan import command as cmdmod
from vllmdiag.services.envs.spec import LegSpec


@dataclass(frozen=True)
class PlannedLeg:
    """A leg of the plan. ``python``: the Python version it runs (the interpreter's own
    where the leg exists, else the version a uv leg asks for); ``interpreter``: its path, or
    :data:`~vllmdiag.plan.command.UNBUILT_PYTHON` for a uv leg not built yet."""

    name: str
    key: str
    python: str
    requirements: tuple[str, ...]
    index_url: str | None
    extra_index_urls: tuple[str, ...]
    exclude_newer: str | None
    existing: str | None
    interpreter: str = ""

    @classmethod
    def of(cls, leg: LegSpec, seen: cmdmod.LegSeen | None = None) -> PlannedLeg:
        return cls(
            name=leg.name,
            key=leg.key(),
            python=_version(leg, seen),
            requirements=tuple(sorted(leg.requirements)),
            index_url=leg.index_url,
            extra_index_urls=tuple(leg.extra_index_urls),
            exclude_newer=leg.exclude_newer,
            existing=str(leg.existing) if leg.existing else None,
            interpreter=seen.python if seen else "",
        )


@dataclass(frozen=True)
class PlannedCell:
    """One cell as it will run: its leg, its environment overlay and exact command (the
    run directory shown as ``<run>`` unless it is given; secrets as ``***``). ``line``:
    the whole as one pasteable shell line; ``unknown``: what is not known before the leg
    is built (see :mod:`vllmdiag.plan.command`)."""

    id: str
    arm: str
    workload: str
    repeat: int
    leg: str
    env_path: str
    env: dict[str, str]
    argv: tuple[str, ...]
    line: str = ""
    unknown: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        cell: planmod.CellPlan,
        env_path: Path,
        command: cmdmod.CellCommand,
        *,
        arm: str,
        workload: str,
    ) -> PlannedCell:
        shown = cmdmod.shown(command)
        return cls(
            cell.id,
            arm,
            workload,
            cell.repeat,
            cell.leg.name,
            str(env_path),
            shown.env,
            shown.argv,
            cmdmod.shell_line(command),
            command.unknown,
        )


def _version(leg: LegSpec, seen: cmdmod.LegSeen | None) -> str:
    """The leg's Python: its interpreter's own where known; else what a uv leg asks for,
    and for an existing environment that cannot be asked, that it is unknown."""
    if seen is not None and seen.version:
        return seen.version
    return "unknown" if leg.existing is not None else leg.python_request
