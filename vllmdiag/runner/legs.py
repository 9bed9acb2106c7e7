"""The legs a run needs, built (or verified and reused) before any cell runs, then
checked for hygiene. A leg that fails to build makes its cells ERRORs, never FAILs; a
contaminated leg stops the run unless the user allows it (the finding is kept either
way)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from vllmdiag import codec
from vllmdiag.envs.cache import Env, EnvCache
from vllmdiag.envs.spec import LegSpec
from vllmdiag.errors import EnvError, ProcessError, VllmdiagError
from vllmdiag.events import Note, Observer
from vllmdiag.journal import RunDir
from vllmdiag.model.recipe import Recipe
from vllmdiag.runner.events import CellsEvent, EnvFailed, EnvReady, HygieneChecked, RunRefused
from vllmdiag.runner.readers import HygieneSummary, RunReaders


@dataclass
class Legs:
    """The run's envs by leg key, and why the others could not be had."""

    envs: dict[str, Env] = field(default_factory=dict)
    failures: dict[str, EnvError] = field(default_factory=dict)
    hygiene: HygieneSummary = field(default_factory=HygieneSummary)


def build_legs(
    specs: Sequence[LegSpec],
    run: RunDir,
    cache: EnvCache,
    emit: Observer[CellsEvent],
) -> Legs:
    legs = Legs()
    for spec in specs:
        log = run.path / "envs" / f"{spec.key()}.log"
        try:
            env = cache.ensure(spec, observer=emit, log=log)
        except (EnvError, ProcessError) as exc:
            failure = exc if isinstance(exc, EnvError) else EnvError(exc.message, hint=exc.hint)
            legs.failures[spec.key()] = failure
            emit(EnvFailed(spec.name, spec.key(), exc.render()))
            continue
        legs.envs[spec.key()] = env
        record = env.record()
        emit(EnvReady(record))
        run.write_json(f"envs/{spec.key()}.json", codec.dump(record))
    return legs


def check_hygiene(
    legs: Legs,
    recipe: Recipe,
    run: RunDir,
    readers: RunReaders,
    executor: str,
    emit: Observer[CellsEvent],
    *,
    allow_contaminated: bool,
) -> None:
    """Doctor every built leg, write ``manifest.json``, and refuse a contaminated leg."""
    legs.hygiene = readers.hygiene(list(legs.envs.values()), recipe)
    run.write_json(
        "manifest.json",
        {
            "recipe": recipe.model_dump(mode="json", by_alias=True),
            "envs": {k: codec.dump(v.record()) for k, v in legs.envs.items()},
            "env_errors": {k: e.render() for k, e in legs.failures.items()},
            "hygiene": codec.dump(legs.hygiene),
            "executor": executor,
        },
    )
    emit(HygieneChecked(tuple(legs.hygiene.per_leg.values()), legs.hygiene.contaminated))
    for line in legs.hygiene.lines():
        emit(Note("warning", line))
    if legs.hygiene.contaminated and not allow_contaminated:
        emit(RunRefused("contaminated leg: " + "; ".join(legs.hygiene.contaminations())))
        raise VllmdiagError(
            "a leg is contaminated: " + "; ".join(legs.hygiene.contaminations()),
            where=str(run.path / "manifest.json"),
            hint="clean the leg, or pass --allow-contaminated to measure it anyway "
            "(the finding stays in the manifest)",
        )
