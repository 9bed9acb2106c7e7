"""A study → the cells the runner runs. Pure: no I/O.

Cells are repeats × legs × models × workloads, repetition the outer loop (slow drift
cannot line up with the version axis). The study becomes a recipe the cell runner
understands: one runner workload per (model, workload), named ``model.workload``, with
the model's id in ``{model}``; each cell's leg is the study leg with the model's pins
for it (a derived leg, disclosed in the manifest), its flags the harness's, the model's
and ``--tensor-parallel-size``, its environment the harness's, the model's and the
workload's.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from vllmdiag.errors import ConfigError
from vllmdiag.jobs.study.recipe import TP_FLAG, StudyRecipe, cell_id, workload_key
from vllmdiag.model.arms import Flag
from vllmdiag.model.recipe import Baseline, MetricSpec, Recipe, WorkloadConfig
from vllmdiag.plan.cells import CellPlan, leg_spec
from vllmdiag.services.envs.spec import LegSpec


@dataclass(frozen=True, order=True)
class Slot:
    """One (leg, model, workload) of a study: a row's value on one leg."""

    leg: str
    model: str
    workload: str


@dataclass(frozen=True)
class StudyCell:
    plan: CellPlan
    slot: Slot


@dataclass(frozen=True)
class Filters:
    """A batch may run part of the study (a backfill): these models, legs, workloads
    (empty: all)."""

    models: tuple[str, ...] = ()
    legs: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()

    def admits(self, slot: Slot) -> bool:
        return (
            (not self.models or slot.model in self.models)
            and (not self.legs or slot.leg in self.legs)
            and (not self.workloads or slot.workload in self.workloads)
        )

    def check(self, study: StudyRecipe) -> None:
        """Every name given is one of the study's (a typo would silently run nothing)."""
        for option, given, known in (
            ("--model", self.models, study.models),
            ("--leg", self.legs, study.legs),
            ("--workload", self.workloads, study.workloads),
        ):
            for name in given:
                if name not in known:
                    close = difflib.get_close_matches(name, list(known), n=1)
                    raise ConfigError(
                        f"{option} {name!r} is not in study {study.name!r}",
                        where=str(study.source) if study.source else None,
                        hint=f"did you mean {close[0]!r}?"
                        if close
                        else "one of: " + ", ".join(known),
                    )

    @property
    def empty(self) -> bool:
        return not (self.models or self.legs or self.workloads)


def leg_for(study: StudyRecipe, leg: str, model: str) -> LegSpec:
    """The leg a model's cells run on: the study leg with the model's pins for it."""
    spec = leg_spec(leg, study.legs[leg])
    for pin in study.models[model].pins.get(leg, ()):
        spec = spec.with_pin(pin)
    return spec


def cell_flags(study: StudyRecipe, model: str) -> tuple[Flag, ...]:
    """The harness's flags, the model's (the same flag named twice: the model's wins),
    and its tensor-parallel size."""
    m = study.models[model]
    merged: dict[str, Flag] = {}
    for flag in (*study.harness.flags, *m.flags, Flag(name=TP_FLAG, value=str(m.tp))):
        merged.pop(flag.name, None)
        merged[flag.name] = flag
    return tuple(merged.values())


def cell_env(study: StudyRecipe, model: str, workload: str) -> dict[str, str]:
    return {**study.harness.env, **study.models[model].env, **study.workloads[workload].env}


def metric_specs(study: StudyRecipe, workload: str) -> tuple[MetricSpec, ...]:
    out = []
    for name in study.workload_metrics(workload):
        m = study.metrics[name]
        source = {"json": m.json_file, "key": m.key} if m.json_file else {"regex": m.regex}
        out.append(MetricSpec.model_validate({"name": name, **source, "better": m.better}))
    return tuple(out)


def workload_config(study: StudyRecipe, model: str, workload: str) -> WorkloadConfig:
    """The runner's workload for one (model, workload): the template, only the fields
    the study set (a command workload that declares its shape is checked against it)."""
    wl = study.workloads[workload]
    given = wl.model_dump(exclude_unset=True, exclude={"metrics", "env"})
    return WorkloadConfig.model_validate(
        {**given, "model": study.models[model].model, "metrics": metric_specs(study, workload)}
    )


def as_recipe(study: StudyRecipe) -> Recipe:
    """The study as a recipe the cell runner takes (no arms: a cell's leg says it all)."""
    first = next(iter(study.legs))
    return Recipe(
        name=study.name,
        question=study.question or f"study {study.name}",
        legs=study.legs,
        baseline=Baseline(leg=first, env=study.harness.env, flags=study.harness.flags),
        workloads={
            workload_key(model, wl): workload_config(study, model, wl)
            for model in study.models
            for wl in study.model_workloads(model)
        },
        repeats=study.repeats,
        timeout=study.timeout,
        source=study.source,
    )


def slots(study: StudyRecipe) -> list[Slot]:
    """Every (leg, model, workload) the study measures, in table order: model, then
    workload, then leg (skipped ones included: their reason is shown)."""
    return [
        Slot(leg, model, wl)
        for model in study.models
        for wl in study.model_workloads(model)
        for leg in study.legs
    ]


def skipped(study: StudyRecipe, slot: Slot) -> str | None:
    """Why the study does not run ``slot``, or None."""
    return study.models[slot.model].skip.get(slot.leg)


def expand(study: StudyRecipe, filters: Filters = Filters()) -> list[StudyCell]:
    cells = []
    for rep in range(1, study.repeats + 1):
        for leg in study.legs:
            for model in study.models:
                for wl in study.model_workloads(model):
                    slot = Slot(leg, model, wl)
                    if skipped(study, slot) is not None or not filters.admits(slot):
                        continue
                    plan = CellPlan(
                        id=cell_id(rep, leg, model, wl),
                        arm=leg,
                        workload=workload_key(model, wl),
                        repeat=rep,
                        leg=leg_for(study, leg, model),
                        env=cell_env(study, model, wl),
                        flags=cell_flags(study, model),
                    )
                    cells.append(StudyCell(plan, slot))
    return cells


def plans(cells: Sequence[StudyCell]) -> list[CellPlan]:
    return [c.plan for c in cells]
