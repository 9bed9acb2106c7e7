"""The options of every command that runs cells on this machine or across a Ray cluster
(``matrix``, ``study``), in one place: where cells run, and how many times."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console

from vllmdiag.cli.output import plain
from vllmdiag.errors import ConfigError
from vllmdiag.spine.runner import Executor, LocalExecutor


class ExecutorKind(str, Enum):
    LOCAL = "local"
    RAY = "ray"


# Shared with every command that runs cells across nodes (matrix, study).
ExecutorOption = typer.Option(
    ExecutorKind.LOCAL,
    "--executor",
    help="Where cells run: this machine, or the nodes of a Ray cluster (needs vllmdiag's "
    "ray extra).",
)
AddressOption = typer.Option(
    None,
    "--address",
    metavar="HOST:PORT",
    help="With --executor ray: the cluster to run on (default: start a local Ray instance).",
)
GpusOption = typer.Option(
    None,
    "--gpus",
    metavar="N",
    help="GPU slots of this machine (or of the local Ray instance): default, the GPUs it "
    "shows; on a machine without GPUs, N fake slots.",
)

RepeatsOption = typer.Option(
    None,
    "--repeats",
    metavar="N",
    min=1,
    max=100,
    help="Measure every cell N times, repetition the outer loop (default: the recipe's "
    "'repeats'; metric matrices and studies that do not say: 3). With 1 the run has no "
    "evidence of its own noise, and no difference is called.",
)


R = TypeVar("R", bound=BaseModel)


def with_repeats(recipe: R, repeats: int | None) -> R:
    """``recipe`` (a matrix or study recipe) with ``--repeats`` applied (unchanged when
    it was not given)."""
    return recipe if repeats is None else recipe.model_copy(update={"repeats": repeats})


@contextmanager
def connected(
    console: Console, kind: ExecutorKind, address: str | None, gpus: int | None
) -> Iterator[Executor]:
    """The executor the options name, open for the block (saying so before a cluster
    connection, which takes a moment)."""
    if kind is ExecutorKind.RAY:
        where = address or "a local Ray instance"
        console.print(plain(f"connecting to {where} ...", style="dim"), highlight=False)
    with open_executor(kind.value, address=address, gpus=gpus) as executor:
        yield executor


@contextmanager
def open_executor(
    kind: str = "local", *, address: str | None = None, gpus: int | None = None
) -> Iterator[Executor]:
    """The executor ``--executor KIND`` names, ready to run cells, and stopped after:
    ``local`` (this machine; ``gpus`` slots) or ``ray`` (the cluster at ``address``, or a
    local Ray instance with ``gpus`` GPUs)."""
    if kind == "local":
        if address:
            raise ConfigError(
                "--address names a Ray cluster, and this run is on this machine",
                hint="add --executor ray, or drop --address",
            )
        yield LocalExecutor(gpus)
    elif kind == "ray":
        from vllmdiag.adapters.cluster import RayExecutor

        with RayExecutor(address, gpus=gpus) as ray:
            yield ray
    else:
        raise ConfigError(
            f"no executor {kind!r}", hint="--executor local (this machine) or --executor ray"
        )
