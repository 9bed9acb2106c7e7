"""A study recipe: legs × models × workloads × metrics, the seeds' version ablation.

Legs are runtime stacks as in a recipe. Each model has an id (what ``{model}`` becomes),
a tensor-parallel size (passed as ``--tensor-parallel-size``), optional flags and
environment of its own, optional pins per leg (a pin makes that model's cells on that leg
run on a derived leg, and the study discloses it) and optional legs it is not run on.
Workloads are the matrix's (built-ins or commands) and name the study metrics they
report. Cross-references are checked by :func:`problems`, which says where each one is.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from vllmdiag.model.arms import Flag, coerce_env, coerce_flags
from vllmdiag.model.recipe import (
    NAME,
    TIMING_REPEATS,
    Builtin,
    LegConfig,
    MetricSpec,
    Strict,
    check_name,
)

#: Where a problem is in the recipe (a key path) and what is wrong with it.
Problem = tuple[tuple[str | int, ...], str, str | None]


class StudyMetric(Strict):
    """A number each run of a workload reports, and how a table shows it."""

    json_file: str | None = Field(default=None, alias="json")
    key: str | None = None
    regex: str | None = None
    better: Literal["higher", "lower"] = "higher"
    unit: str = ""
    #: Multiplies the recorded value in the tables (1000: seconds shown as ms).
    scale: float = Field(default=1.0, gt=0)
    #: Divide by the workload's output_len in the tables (a latency per output token).
    per_token: bool = False
    #: Digits after the point in the tables (default: by the values' size).
    decimals: int | None = Field(default=None, ge=0, le=6)

    model_config = Strict.model_config | {"populate_by_name": True}

    @model_validator(mode="after")
    def _source(self) -> StudyMetric:
        """The same rules as a recipe's metric: a JSON key or a regex with one group."""
        given = {"json": self.json_file, "key": self.key, "regex": self.regex}
        try:
            MetricSpec.model_validate(
                {"name": "m", **{k: v for k, v in given.items() if v is not None}}
            )
        except ValidationError as exc:
            raise ValueError(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from None
        return self


class StudyWorkload(Strict):
    """A workload template: ``{model}`` is each model's id, ``{flags}`` the harness's,
    the model's and its tensor-parallel size."""

    builtin: Builtin | None = None
    command: tuple[str, ...] | str | None = None
    args: tuple[str, ...] = ()
    input_len: int = Field(default=1024, gt=0)
    output_len: int = Field(default=128, gt=0)
    num_prompts: int = Field(default=200, gt=0)
    batch_size: int = Field(default=8, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    metrics: tuple[str, ...] = ()

    _env = field_validator("env", mode="before")(classmethod(lambda cls, v: coerce_env(v)))

    @field_validator("metrics", mode="before")
    @classmethod
    def _one_or_many(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v


class StudyModel(Strict):
    model: str = Field(min_length=1)
    tp: int = Field(default=1, ge=1, le=1024)
    flags: tuple[Flag, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    #: Leg name → requirements pinned for this model's cells on that leg.
    pins: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    #: The workloads this model runs (default: all of them).
    workloads: tuple[str, ...] | None = None
    #: Leg name → why this model is not run on that leg.
    skip: dict[str, str] = Field(default_factory=dict)

    _flags = field_validator("flags", mode="before")(classmethod(lambda cls, v: coerce_flags(v)))
    _env = field_validator("env", mode="before")(classmethod(lambda cls, v: coerce_env(v)))

    @field_validator("pins", mode="before")
    @classmethod
    def _pins(cls, v: object) -> object:
        if not isinstance(v, dict):
            return v
        out = {}
        for leg, reqs in v.items():
            items = [reqs] if isinstance(reqs, str) else reqs
            if isinstance(items, (list, tuple)):
                for item in items:
                    try:
                        Requirement(str(item))
                    except InvalidRequirement as exc:
                        raise ValueError(f"pin {item!r} is not PEP 508: {exc}") from None
            out[leg] = items
        return out


class Harness(Strict):
    """What every cell gets: environment variables and engine flags."""

    env: dict[str, str] = Field(default_factory=dict)
    flags: tuple[Flag, ...] = ()

    _flags = field_validator("flags", mode="before")(classmethod(lambda cls, v: coerce_flags(v)))
    _env = field_validator("env", mode="before")(classmethod(lambda cls, v: coerce_env(v)))


class StudyRecipe(Strict):
    name: str = Field(pattern=NAME)
    question: str = ""
    legs: dict[str, LegConfig]
    models: dict[str, StudyModel]
    workloads: dict[str, StudyWorkload]
    metrics: dict[str, StudyMetric]
    harness: Harness = Harness()
    #: A study times things: by default enough repeats to measure its own noise.
    repeats: int = Field(default=TIMING_REPEATS, ge=1, le=100)
    timeout: float = Field(default=3600.0, gt=0)
    source: Path | None = None

    @field_validator("legs", "models", "workloads", "metrics")
    @classmethod
    def _names(cls, v: dict[str, object], info: ValidationInfo) -> dict[str, object]:
        if not v:
            raise ValueError(f"a study needs at least one entry under '{info.field_name}'")
        for name in v:
            check_name(str(info.field_name).rstrip("s"), name)
        return v

    @model_validator(mode="after")
    def _references(self) -> StudyRecipe:
        found = problems(self)
        if found:
            path, message, _ = found[0]
            raise ValueError(f"{'.'.join(map(str, path))}: {message}")
        return self

    @property
    def recipe_dir(self) -> Path:
        return self.source.parent if self.source else Path.cwd()

    def model_workloads(self, model: str) -> tuple[str, ...]:
        chosen = self.models[model].workloads
        return tuple(self.workloads) if chosen is None else chosen

    def workload_metrics(self, workload: str) -> tuple[str, ...]:
        return self.workloads[workload].metrics or tuple(self.metrics)


#: The flag a model's ``tp`` becomes; a model gives ``tp``, never the flag itself.
TP_FLAG = "--tensor-parallel-size"
_TP_SPELLINGS = (TP_FLAG, "-tp")


def workload_key(model: str, workload: str) -> str:
    """The name a (model, workload) runs under in the cell runner."""
    return f"{model}.{workload}"


def cell_id(repeat: int, leg: str, model: str, workload: str) -> str:
    return f"r{repeat}.{leg}.{model}.{workload}"


def problems(study: StudyRecipe) -> list[Problem]:
    """Every cross-reference that does not hold, with its key path and a hint."""
    out: list[Problem] = []
    legs = list(study.legs)
    out += _id_problems(study)
    for name, wl in study.workloads.items():
        out += _workload_problems(study, name, wl)
    for name, model in study.models.items():
        base: tuple[str | int, ...] = ("models", name)
        for leg in (*model.pins, *model.skip):
            if leg not in study.legs:
                field = "pins" if leg in model.pins else "skip"
                out.append(((*base, field, leg), f"{leg!r} is not one of the legs", _of(legs)))
        for leg in model.pins:
            if leg in study.legs and study.legs[leg].path is not None:
                out.append(
                    (
                        (*base, "pins", leg),
                        f"leg {leg!r} is an existing environment (path) and cannot take a pin",
                        "pin on a leg vllmdiag builds (requirements), or give the pinned "
                        "stack its own leg",
                    )
                )
        for i, wanted in enumerate(model.workloads or ()):
            if wanted not in study.workloads:
                out.append(
                    (
                        (*base, "workloads", i),
                        f"{wanted!r} is not one of the workloads",
                        _of(study.workloads),
                    )
                )
        for i, flag in enumerate(model.flags):
            if flag.name in _TP_SPELLINGS:
                out.append(
                    ((*base, "flags", i), f"{flag.name} is set by 'tp'", f"write tp: {flag.value}")
                )
        if model.workloads is not None and not model.workloads:
            out.append(((*base, "workloads"), "an empty list runs nothing", "leave it out for all"))
    return out


def _id_problems(study: StudyRecipe) -> list[Problem]:
    """Names become cell ids and paths: two (leg, model, workload) must not share one
    (leg ``a`` with model ``b.c`` and leg ``a.b`` with model ``c``), and a (model,
    workload) name must stay a valid name."""
    seen: dict[str, tuple[str, str, str]] = {}
    for model in study.models:
        for wl in study.model_workloads(model):
            if len(workload_key(model, wl)) > 100:
                return [
                    (
                        ("models", model),
                        f"model {model!r} with workload {wl!r} makes a name longer than 100 "
                        "characters",
                        "shorten the model's name (its id goes under 'model')",
                    )
                ]
            for leg in study.legs:
                key = cell_id(1, leg, model, wl)
                other = seen.setdefault(key, (leg, model, wl))
                if other != (leg, model, wl):
                    return [
                        (
                            ("models", model),
                            f"leg {leg!r}, model {model!r}, workload {wl!r} and leg "
                            f"{other[0]!r}, model {other[1]!r}, workload {other[2]!r} would "
                            f"share the cell id {key}",
                            "rename one of them (e.g. without the dot)",
                        )
                    ]
    return []


def _workload_problems(study: StudyRecipe, name: str, wl: StudyWorkload) -> list[Problem]:
    base: tuple[str | int, ...] = ("workloads", name)
    out: list[Problem] = []
    if (wl.builtin is None) == (wl.command is None):
        out.append((base, "a workload takes exactly one of 'builtin' or 'command'", None))
    for i, metric in enumerate(wl.metrics):
        if metric not in study.metrics:
            out.append(
                ((*base, "metrics", i), f"{metric!r} is not one of the metrics", _of(study.metrics))
            )
    for metric in study.workload_metrics(name):
        m = study.metrics.get(metric)
        asks = m is not None and m.per_token and wl.command is not None
        if asks and "output_len" not in wl.model_fields_set:
            out.append(
                (
                    base,
                    f"metric {metric!r} is per output token, but command workload "
                    f"{name!r} does not say its output_len",
                    "add 'output_len: N' (the tokens each request generates)",
                )
            )
    if not wl.metrics and len(study.metrics) > 1:
        out.append(
            (
                base,
                f"workload {name!r} does not say which metrics it reports, and the study "
                f"has {len(study.metrics)}",
                "add 'metrics: [" + ", ".join(study.metrics) + "]' (the ones it reports)",
            )
        )
    return out


def _of(names: Iterable[object]) -> str:
    return "one of: " + ", ".join(str(n) for n in names)
