"""A cell as it runs on one node: its command (the node's python, its working
directory there), its reuse key, and the environment it gets; and the results of cells
that never ran (an error before the start, a stop)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import cells as planmod
from vllmdiag.plan import command as cmdmod
from vllmdiag.plan import workloads as wlmod
from vllmdiag.services import proc, stray
from vllmdiag.services.envs.cache import Env
from vllmdiag.spine.journal import RunDir
from vllmdiag.spine.runner.legs import NodeLegs
from vllmdiag.spine.runner.slots import Placement

#: What a cell never inherits from vllmdiag's environment (``VLLMDIAG_CACHE``,
#: ``VLLMDIAG_LOCK``, a tag of the cell vllmdiag itself runs in); a recipe may set them.
INHERITED_NOT = "VLLMDIAG_"


@dataclass(frozen=True)
class CellOnNode:
    """A cell as it will run on one node: its command, reuse key and env there."""

    plan: planmod.CellPlan
    node: NodeLegs
    env: Env
    argv: list[str]
    key: str
    out_dir: Path
    dialect: wlmod.BenchDialect = wlmod.CURRENT
    #: The recipe's environment overlay, as the command renderer gave it.
    overlay: dict[str, str] = field(default_factory=dict)


def on_node(
    recipe: Recipe, run: RunDir, run_id: str, cell: planmod.CellPlan, node: NodeLegs
) -> CellOnNode:
    """The cell's command and reuse key on ``node`` (the key names the node's python and
    working directory: the same paths on every node give the same key)."""
    env = node.legs.envs[cell.leg.key()]
    out_dir = node.node.out_dir(run, run_id, cell.id)
    wl = recipe.workloads[cell.workload]
    dialect = (
        node.node.dialect(env, cell.env.get("PYTHONPATH", ""))
        if cmdmod.needs_dialect(wl)
        else wlmod.CURRENT
    )
    command = cmdmod.render(
        wl,
        name=cell.workload,
        flags=cell.flags,
        env=cell.env,
        out_dir=out_dir,
        recipe_dir=recipe.recipe_dir,
        leg=cmdmod.LegSeen(str(env.python), dialect=dialect),
    )
    argv = list(command.argv)
    key = planmod.reuse_key(cell, env.lock_hash, argv, cell.workload)
    return CellOnNode(cell, node, env, argv, key, out_dir, dialect, command.env)


def child_environ(c: CellOnNode, placement: Placement, run_id: str) -> dict[str, str]:
    """What the cell's process gets: the node's environment less what leaks between
    runs, the leg first on PATH, the recipe's variables, its GPUs, its tag and node."""
    env = c.env.child_environ(c.node.node.base_environ())
    for name in [k for k in env if k.startswith(INHERITED_NOT)]:
        del env[name]  # vllmdiag's own settings (cache, lock) are not the cell's
    env.update(c.overlay)
    if placement.visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = placement.visible
    env[proc.TAG_VAR] = f"{run_id}:{c.plan.id}"
    env[stray.NODE_VAR] = stray.node_id()
    env[stray.OWNER_VAR] = stray.owner_id()
    return env


def skipped_result(cell: planmod.CellPlan) -> CellResult:
    return CellResult(
        id=cell.id,
        arm=cell.arm,
        workload=cell.workload,
        repeat=cell.repeat,
        outcome=Outcome.SKIPPED,
        rc=None,
        elapsed_s=0.0,
        reason="not run: the run was interrupted",
        leg=cell.leg.name,
    )


def error_result(cell: planmod.CellPlan, reason: str, ran: CellOnNode | None = None) -> CellResult:
    return CellResult(
        id=cell.id,
        arm=cell.arm,
        workload=cell.workload,
        repeat=cell.repeat,
        outcome=Outcome.ERROR,
        rc=None,
        elapsed_s=0.0,
        reuse_key=ran.key if ran else "",
        reason=reason,
        leg=cell.leg.name,
        lock_hash=ran.env.lock_hash if ran else "",
        argv=tuple(ran.argv) if ran else (),
    )
