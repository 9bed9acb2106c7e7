"""The legs a run needs, built (or verified and reused) on every node before its first
cell, then checked for hygiene there. A leg that fails to build makes its cells ERRORs,
never FAILs; a contaminated leg stops the run unless the user allows it (the finding is
kept either way, per node, in ``manifest.json``).

On this machine alone the run directory is laid out as it always was (``envs/<key>.json``
and ``.log``); across nodes each node's legs, logs and findings go under
``nodes/<node>/``, and ``envs/<key>.json`` holds the first node's record of each leg.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vllmdiag import codec
from vllmdiag.errors import EnvError, ProcessError, VllmdiagError
from vllmdiag.events import Note, Observer
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan.cells import CellPlan, legs_needed
from vllmdiag.readers.hygiene import DoctorReport, failed_leg
from vllmdiag.services.envs.cache import Env
from vllmdiag.services.envs.spec import LegSpec
from vllmdiag.spine.journal import RunDir
from vllmdiag.spine.runner.events import EnvFailed, EnvReady, HygieneChecked, RunRefused
from vllmdiag.spine.runner.executor import Node, NodeLost
from vllmdiag.spine.runner.pool import in_threads
from vllmdiag.spine.runner.readers import HygieneSummary
from vllmdiag.spine.runner.slots import gpus_needed


@dataclass
class Legs:
    """The run's envs by leg key, and why the others could not be had."""

    envs: dict[str, Env] = field(default_factory=dict)
    failures: dict[str, EnvError] = field(default_factory=dict)
    hygiene: HygieneSummary = field(default_factory=HygieneSummary)


@dataclass
class NodeLegs:
    """One node and its legs. ``label``: how the run directory and the journal name the
    node ("" when the run is on this machine alone)."""

    node: Node
    legs: Legs
    label: str = ""


def legs_per_node(
    nodes: Sequence[Node],
    cells: Sequence[CellPlan],
    recipe: Recipe,
    emit: Observer[Any],
    *,
    cluster: bool,
) -> list[tuple[Node, list[LegSpec]]]:
    """Each node with the legs of the cells its GPUs could hold (a node too small for
    every cell builds nothing: a CPU-only head of a GPU cluster)."""
    out = []
    for node in nodes:
        fitting = [
            c for c in cells if node.gpus is None or gpus_needed(recipe, c).count <= len(node.gpus)
        ]
        if cluster and cells and not fitting:
            emit(
                Note(
                    "info",
                    f"node {node.label} ({len(node.gpus or ())} GPU(s)) can hold none of "
                    "the cells: no leg is built there",
                )
            )
        out.append((node, legs_needed(list(fitting))))
    return out


def prepare_nodes(
    nodes: Sequence[tuple[Node, Sequence[LegSpec]]],
    recipe: Recipe,
    run: RunDir,
    emit: Observer[Any],
    *,
    executor: str,
    allow_contaminated: bool,
    cluster: bool,
) -> list[NodeLegs]:
    """Build and check each node's legs (those of the cells that fit there), in parallel
    across nodes; a node that leaves the cluster meanwhile is left out, with a warning."""
    jobs = [
        functools.partial(_prepare, node, specs, recipe, run, node_dir(node) if cluster else "")
        for node, specs in nodes
    ]
    outcomes = [jobs[0](emit)] if len(jobs) == 1 else in_threads(jobs, emit)
    ready: list[NodeLegs] = []
    for outcome in outcomes:
        if isinstance(outcome, NodeLost):
            emit(Note("warning", f"{outcome.message}; its cells run on the other nodes"))
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            ready.append(outcome)
    if not ready:
        raise VllmdiagError(
            "no node could prepare the legs: every node left the cluster",
            hint="check the cluster (ray status), then resume the run with --resume",
        )
    _check(ready, recipe, run, executor, emit, allow_contaminated, cluster)
    return ready


def node_dir(node: Node) -> str:
    """A node's name in the run directory: its label, as a safe file name."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", node.label)[:100] or node.id


def _prepare(
    node: Node,
    specs: Sequence[LegSpec],
    recipe: Recipe,
    run: RunDir,
    label: str,
    emit: Observer[Any],
) -> NodeLegs:
    legs = Legs()
    blind = _cannot_see_recipe(node, recipe)
    if blind is not None:
        for spec in specs:
            legs.failures[spec.key()] = blind
            emit(EnvFailed(spec.name, spec.key(), blind.render(), node=label))
        return NodeLegs(node, legs, label)
    where = f"nodes/{label}/envs" if label else "envs"
    for spec in specs:
        log = run.path / where / f"{spec.key()}.log"
        try:
            env = node.ensure(spec, observer=emit, log=log)
        except NodeLost:
            raise
        except (EnvError, ProcessError) as exc:
            failure = exc if isinstance(exc, EnvError) else EnvError(exc.message, hint=exc.hint)
            legs.failures[spec.key()] = failure
            emit(EnvFailed(spec.name, spec.key(), exc.render(), node=label))
            continue
        legs.envs[spec.key()] = env
        record = env.record()
        emit(EnvReady(record, node=label))
        run.write_json(f"{where}/{spec.key()}.json", codec.dump(record))
    run_env = dict(recipe.baseline.env)
    reports = {env.spec.name: node.doctor(env, run_env) for env in legs.envs.values()}
    for spec in specs:  # a path: leg that cannot be used is a hygiene finding too
        failed = legs.failures.get(spec.key())
        if spec.existing is not None and failed is not None:
            reports.setdefault(spec.name, failed_leg(spec.name, str(spec.existing), failed))
    legs.hygiene = HygieneSummary(reports)
    return NodeLegs(node, legs, label)


def _cannot_see_recipe(node: Node, recipe: Recipe) -> EnvError | None:
    """A node that would run files from the recipe's directory (``{recipe_dir}``) must
    read the recipe there as it is here; else its cells would fail for a reason that is
    vllmdiag's setup, not the leg's."""
    uses = any("{recipe_dir}" in str(w.command or "") for w in recipe.workloads.values())
    if not uses or recipe.source is None or node.sees(recipe.source):
        return None
    return EnvError(
        f"node {node.label} cannot read the recipe's directory {recipe.recipe_dir} as this "
        "machine does (its workloads run files from it)",
        where=f"node {node.label}",
        hint="put the recipe's directory on a filesystem every node shares, or copy it to "
        "the same path on every node",
    )


def merged(ready: Sequence[NodeLegs]) -> Legs:
    """One view over the nodes: each leg as the first node that has it built it; a leg
    fails only where it failed on every node."""
    out = Legs()
    reports: dict[str, DoctorReport] = {}
    for nl in ready:
        for key, env in nl.legs.envs.items():
            out.envs.setdefault(key, env)
        for leg, report in nl.legs.hygiene.per_leg.items():
            reports.setdefault(leg, report)
    out.hygiene = HygieneSummary(reports)
    for nl in ready:
        for key, failure in nl.legs.failures.items():
            if key not in out.envs:
                out.failures.setdefault(key, failure)
    return out


def _check(
    ready: Sequence[NodeLegs],
    recipe: Recipe,
    run: RunDir,
    executor: str,
    emit: Observer[Any],
    allow_contaminated: bool,
    cluster: bool,
) -> None:
    """Write ``manifest.json`` and refuse a contaminated leg on any node."""
    view = merged(ready)
    manifest: dict[str, Any] = {
        "recipe": recipe.model_dump(mode="json", by_alias=True),
        "envs": {k: codec.dump(v.record()) for k, v in view.envs.items()},
        "env_errors": {k: e.render() for k, e in view.failures.items()},
        "hygiene": codec.dump(view.hygiene),
        "executor": executor,
    }
    if cluster:
        manifest["nodes"] = {
            nl.label: {
                "id": nl.node.id,
                "gpus": list(nl.node.gpus) if nl.node.gpus is not None else None,
                "envs": {k: codec.dump(v.record()) for k, v in nl.legs.envs.items()},
                "env_errors": {k: e.render() for k, e in nl.legs.failures.items()},
                "hygiene": codec.dump(nl.legs.hygiene),
            }
            for nl in ready
        }
    if cluster:
        for env in view.envs.values():
            run.write_json(f"envs/{env.spec.key()}.json", codec.dump(env.record()))
    run.write_json("manifest.json", manifest)
    found: list[str] = []
    for nl in ready:
        summary = nl.legs.hygiene
        emit(HygieneChecked(tuple(summary.per_leg.values()), summary.contaminated, node=nl.label))
        prefix = f"node {nl.label}: " if nl.label else ""
        for line in summary.lines():
            emit(Note("warning", prefix + line))
        found += [prefix + c for c in summary.contaminations()]
    if found and not allow_contaminated:
        emit(RunRefused("contaminated leg: " + "; ".join(found)))
        raise VllmdiagError(
            "a leg is contaminated: " + "; ".join(found),
            where=str(run.path / "manifest.json"),
            hint="clean the leg, or pass --allow-contaminated to measure it anyway "
            "(the finding stays in the manifest)",
        )
