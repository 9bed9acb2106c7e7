"""A recipe: the question, the legs, the baseline, workloads, arms and how to score them."""

from __future__ import annotations

import datetime as dt
import re
import shlex
import string
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from vllmdiag.model.arms import Arm, Flag, coerce_env, coerce_flags
from vllmdiag.model.regexshape import nested_repeat

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"
#: What a workload's command may name in braces.
PLACEHOLDERS = ("model", "out_dir", "flags", "recipe_dir", "python")
_NAME = re.compile(NAME)


def check_name(kind: str, name: str) -> None:
    """Leg and workload names become parts of paths and cell ids: letters, digits and
    ``_ . + -``, starting with a letter or digit (so never ``..`` or ``a/b``)."""
    if not _NAME.match(name) or len(name) > 100:
        raise ValueError(
            f"{kind} name {name!r} is not allowed: use letters, digits and _ . + - "
            "(starting with a letter or digit, at most 100 characters)"
        )


def not_a_bool(value: object) -> object:
    """YAML's ``true`` is not a count, nor a number of seconds (pydantic would read 1)."""
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is not a number here: give a number")
    return value


def check_placeholders(word: str) -> None:
    """Each ``{name}`` in a command word is one of :data:`PLACEHOLDERS`, whole: no
    ``{python.attr}``, ``{model[0]}``, ``{flags!r}`` or a lone brace."""
    try:
        parts = list(string.Formatter().parse(word))
    except ValueError as exc:
        raise ValueError(
            f"command word {word!r}: {exc}; write {{{{ and }}}} for literal braces"
        ) from None
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        if field not in PLACEHOLDERS or spec or conversion:
            raise ValueError(
                f"command word {word!r}: unknown placeholder {{{field}}}; placeholders are "
                + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                + " (whole, without attributes or formats); write {{ and }} for literal braces"
            )


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LegConfig(Strict):
    """A runtime stack: build it (python + requirements) or use one (``path``: a venv or
    its python, used as it is; requirements given with a path are checked, not installed)."""

    python: str | None = None
    requirements: tuple[str, ...] = ()
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    exclude_newer: str | None = None
    path: Path | None = None

    @field_validator("requirements", mode="before")
    @classmethod
    def _reqs(cls, v: object) -> object:
        items = [v] if isinstance(v, str) else v
        if isinstance(items, (list, tuple)):
            for i, item in enumerate(items):
                try:
                    Requirement(str(item))
                except InvalidRequirement as exc:
                    raise ValueError(f"requirement {i} ({item!r}) is not PEP 508: {exc}") from None
        return items

    @field_validator("python", mode="before")
    @classmethod
    def _python(cls, v: object) -> object:
        if isinstance(v, float):  # YAML reads 3.10 as 3.1: refuse rather than guess
            raise ValueError(f"quote the Python version ('{v}' is read as a number)")
        text = str(v) if v is not None else None
        if text is not None and not (
            re.fullmatch(r"\d+\.\d+(\.\d+)?", text) or text.startswith(("/", "~"))
        ):
            raise ValueError(f"python is a version like '3.11' or an interpreter path, not {v!r}")
        return v

    @field_validator("exclude_newer", mode="before")
    @classmethod
    def _date(cls, v: object) -> object:
        if isinstance(v, (dt.date, dt.datetime)):
            return v.isoformat()
        if v is not None:
            try:
                dt.datetime.fromisoformat(str(v).replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"exclude_newer must be an ISO date (2026-09-20): {v!r}") from None
        return v

    @model_validator(mode="after")
    def _built_or_existing(self) -> LegConfig:
        if self.path is not None and (self.index_url or self.exclude_newer or self.python):
            raise ValueError(
                "an existing leg (path) is used as it is: python, index_url and "
                "exclude_newer only apply to legs vllmdiag builds"
            )
        if self.path is None and not self.requirements:
            raise ValueError("a leg needs requirements (e.g. ['vllm==0.18.0']) or a path")
        return self


class Builtin(str, Enum):
    THROUGHPUT = "vllm-throughput"
    LATENCY = "vllm-latency"
    SMOKE = "vllm-smoke"


class MetricSpec(Strict):
    """A number a workload reports: a key in a JSON file it writes, or a regex group."""

    name: str = Field(pattern=NAME)
    json_file: str | None = Field(default=None, alias="json")
    key: str | None = None
    regex: str | None = None
    better: Literal["higher", "lower"] = "higher"

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _source(self) -> MetricSpec:
        if (self.json_file is None) == (self.regex is None):
            raise ValueError("a metric takes exactly one of 'json' (with 'key') or 'regex'")
        if self.json_file is not None and not self.key:
            raise ValueError("a json metric needs 'key' (dotted, e.g. percentiles.50)")
        if self.regex is not None:
            try:
                pattern = re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"bad regex: {exc}") from None
            if pattern.groups < 1:
                raise ValueError("the regex needs one capture group around the number")
            nested = nested_repeat(self.regex)
            if nested:
                raise ValueError(
                    f"the regex could backtrack without end over a log: {nested}; repeat a "
                    "simple class instead (e.g. '(a+)+$' -> 'a+$')"
                )
        return self


class WorkloadConfig(Strict):
    """What a cell runs: a built-in vLLM benchmark or any command template.

    Placeholders: ``{model}``, ``{out_dir}``, ``{flags}`` (expands to the baseline's and
    the arm's flags), ``{recipe_dir}``, ``{python}`` (the leg's interpreter).
    """

    builtin: Builtin | None = None
    command: tuple[str, ...] | str | None = None
    model: str | None = None
    args: tuple[str, ...] = ()
    input_len: int = Field(default=1024, gt=0)
    output_len: int = Field(default=128, gt=0)
    num_prompts: int = Field(default=200, gt=0)
    batch_size: int = Field(default=8, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    metrics: tuple[MetricSpec, ...] = ()
    #: GPUs a cell of this workload takes (0: none, it never waits for one); unset: the
    #: tensor/pipeline/data-parallel sizes in its flags, else one.
    gpus: int | None = Field(default=None, ge=0, le=4096)

    _env = field_validator("env", mode="before")(classmethod(lambda cls, v: coerce_env(v)))
    _counts = field_validator(
        "input_len", "output_len", "num_prompts", "batch_size", "gpus", mode="before"
    )(classmethod(lambda cls, v: not_a_bool(v)))

    @model_validator(mode="after")
    def _what(self) -> WorkloadConfig:
        if (self.builtin is None) == (self.command is None):
            raise ValueError("a workload takes exactly one of 'builtin' or 'command'")
        if isinstance(self.command, str):
            try:
                words = shlex.split(self.command)
            except ValueError as exc:
                raise ValueError(
                    f"command cannot be split into words ({exc}): check its quotes, or "
                    "give it as a list"
                ) from None
        else:
            words = list(self.command or ())
        if self.command is not None and not words:
            raise ValueError("command is empty: give the program and its arguments")
        for word in words:
            check_placeholders(word)
        if self.builtin is not None and not self.model:
            raise ValueError(f"the built-in {self.builtin.value} workload needs 'model'")
        return self


class ProfileWindow(Strict):
    """``vllmdiag profile``'s capture window: steps run before it (not captured) and
    steps captured; unset: the tool's defaults. ``--warmup`` / ``--steps`` win."""

    warmup: int | None = Field(default=None, ge=0, le=100_000)
    steps: int | None = Field(default=None, ge=1, le=100_000)


class Baseline(Strict):
    leg: str
    env: dict[str, str] = Field(default_factory=dict)
    flags: tuple[Flag, ...] = ()

    _flags = field_validator("flags", mode="before")(classmethod(lambda cls, v: coerce_flags(v)))
    _env = field_validator("env", mode="before")(classmethod(lambda cls, v: coerce_env(v)))


#: Repeats of a metric matrix or a study whose recipe does not say: enough to measure
#: the run's own noise (see :mod:`vllmdiag.model.noise`).
TIMING_REPEATS = 3


class Recipe(Strict):
    """A validated recipe; arms are resolved against the library at load time."""

    name: str = Field(pattern=NAME)
    question: str
    legs: dict[str, LegConfig]
    baseline: Baseline
    workloads: dict[str, WorkloadConfig]
    arms: tuple[Arm, ...] = ()
    controls: tuple[Arm, ...] = ()
    #: Loading a metric matrix without ``repeats`` gives it :data:`TIMING_REPEATS`.
    repeats: int = Field(default=1, ge=1, le=100)
    #: Measure the baseline again before each arm after the first, to catch drift.
    baseline_between_arms: bool = False
    timeout: float = Field(default=3600.0, gt=0, le=30 * 86400, allow_inf_nan=False)
    metrics: tuple[MetricSpec, ...] = ()
    target: str | None = None
    #: GPUs each cell takes where its workload does not say (see WorkloadConfig.gpus).
    gpus: int | None = Field(default=None, ge=0, le=4096)
    #: The capture window of ``vllmdiag profile`` on this recipe.
    profile: ProfileWindow | None = None
    source: Path | None = None

    _counts = field_validator("repeats", "timeout", "gpus", mode="before")(
        classmethod(lambda cls, v: not_a_bool(v))
    )

    @field_validator("legs", "workloads")
    @classmethod
    def _names(cls, v: dict[str, object], info: ValidationInfo) -> dict[str, object]:
        if not v:
            raise ValueError(
                f"no {info.field_name}: a recipe needs at least one (a matrix of none "
                "would run nothing)"
            )
        for name in v:
            check_name(str(info.field_name).rstrip("s"), name)
        return v

    @model_validator(mode="after")
    def _references(self) -> Recipe:
        if self.baseline.leg not in self.legs:
            raise ValueError(f"baseline.leg {self.baseline.leg!r} is not one of the legs")
        seen: set[str] = {"baseline"}
        for arm in (*self.arms, *self.controls):
            if arm.name in seen:
                raise ValueError(f"two arms are named {arm.name!r}")
            seen.add(arm.name)
            if arm.leg is not None and arm.leg not in self.legs:
                raise ValueError(f"arm {arm.name!r} names leg {arm.leg!r}, not one of the legs")
        if self.target is not None and self.target not in {c.name for c in self.controls}:
            raise ValueError(f"target {self.target!r} must name one of the controls")
        clash = cell_id_clash(["baseline", *(a.name for a in self.all_arms())], self.workloads)
        if clash:
            raise ValueError(clash)
        return self

    @property
    def recipe_dir(self) -> Path:
        return self.source.parent if self.source else Path.cwd()

    def metrics_for(self, workload: str) -> tuple[MetricSpec, ...]:
        return self.workloads[workload].metrics or self.metrics

    @property
    def is_metric_matrix(self) -> bool:
        return any(self.metrics_for(w) for w in self.workloads)

    def all_arms(self) -> tuple[Arm, ...]:
        return (*self.arms, *self.controls)


def cell_id_clash(arms: Iterable[str], workloads: Iterable[str]) -> str | None:
    """Cell ids are ``r<repeat>.<arm>.<workload>`` and both names may hold dots: arm
    ``a`` with workload ``w.v`` and arm ``a.w`` with workload ``v`` would share one id
    (and one result file). Say so, or None."""
    seen: dict[str, tuple[str, str]] = {}
    names = list(workloads)
    for arm in arms:
        for wl in names:
            key = f"{arm}.{wl}"
            if key in seen and seen[key] != (arm, wl):
                other_arm, other_wl = seen[key]
                return (
                    f"arm {arm!r} with workload {wl!r} and arm {other_arm!r} with workload "
                    f"{other_wl!r} would share the cell id r1.{key}: rename one of them "
                    "(e.g. without the dot)"
                )
            seen[key] = (arm, wl)
    return None
