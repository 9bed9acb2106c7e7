"""One cell of a recipe on its own, optionally on a pinned leg: the check that
``vllmdiag bisect --recipe R --cell ID`` runs at each step."""

from __future__ import annotations

from dataclasses import replace

from vllmdiag.engine import plan as planmod
from vllmdiag.engine.events import Observer, ignore
from vllmdiag.engine.journal import host
from vllmdiag.engine.matrix import MatrixOptions, MatrixRun
from vllmdiag.engine.matrix_plan import find_cell
from vllmdiag.locks import file_lock
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.recipe import Recipe
from vllmdiag.paths import node_lock_path


def run_single_cell(
    recipe: Recipe,
    cell_id: str,
    options: MatrixOptions,
    *,
    pin: str | None = None,
    observer: Observer = ignore,
) -> CellResult:
    """Run one cell of ``recipe`` (optionally on its leg with ``pin`` added) into its own
    run directory ``options.out``: what ``vllmdiag bisect --recipe --cell`` checks."""
    cell = find_cell(planmod.expand(recipe), cell_id)
    if pin is not None:
        cell = replace(cell, leg=cell.leg.with_pin(pin))
    with file_lock(node_lock_path(), wait=False, what="the node lock"):
        run = MatrixRun(recipe, options, observer)
        run.run.event(
            "run_started",
            recipe=recipe.name,
            source=str(recipe.source),
            cells=1,
            resumed=False,
            host=host(),
            executor=options.executor.name,
            single_cell=cell.id,
            pin=pin,
        )
        run.build_legs([cell.leg])
        result = run.run_cell(1, 1, cell, None)
        if result is None:
            raise KeyboardInterrupt
        run.run.event("run_finished", status="complete")
        return result
