"""Arms: single-variable changes to a baseline.

An arm changes exactly one of: an environment variable (``env``), a dependency pin
(``pin``), a CLI flag (``flag``), or the whole runtime stack (``leg``, a control). An arm
that changes more than one thing must say ``compound: true``; the verdict then never
calls it single-variable.
"""

from __future__ import annotations

import shlex
from enum import Enum

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class ArmKind(str, Enum):
    ENV = "env"
    PIN = "pin"
    FLAG = "flag"
    LEG = "leg"


class Flag(BaseModel):
    """One CLI flag, with or without a value: ``--enforce-eager``, ``--moe-backend triton``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: str | None = None

    @classmethod
    def parse(cls, text: str) -> Flag:
        tokens = shlex.split(text)
        if not tokens or not tokens[0].startswith("-"):
            raise ValueError(f"a flag starts with '-': {text!r}")
        name, eq, inline = tokens[0].partition("=")
        if eq and len(tokens) == 1:
            return cls(name=name, value=inline)
        if len(tokens) > 2 or (eq and len(tokens) > 1):
            raise ValueError(
                f"{text!r} is more than one flag; an arm changes one thing "
                "(split it into two arms, or declare 'compound: true')"
            )
        return cls(name=name, value=tokens[1] if len(tokens) == 2 else None)

    def argv(self) -> list[str]:
        return [self.name] if self.value is None else [self.name, self.value]

    def __str__(self) -> str:
        return " ".join(self.argv())


class Arm(BaseModel):
    """A named change with the hypothesis it falsifies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$")
    hypothesis: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    pin: tuple[str, ...] = ()
    flag: tuple[Flag, ...] = ()
    leg: str | None = None
    compound: bool = False
    honoured_by: str | None = None
    fingerprint_field: str | None = None
    family: str = ""

    @field_validator("pin", mode="before")
    @classmethod
    def _pins(cls, v: object) -> object:
        items = [v] if isinstance(v, str) else v
        if isinstance(items, (list, tuple)):
            for item in items:
                try:
                    Requirement(str(item))
                except InvalidRequirement as exc:
                    raise ValueError(f"pin {item!r} is not a PEP 508 requirement: {exc}") from None
        return items

    _flags = field_validator("flag", mode="before")(classmethod(lambda cls, v: coerce_flags(v)))
    _env = field_validator("env", mode="before")(classmethod(lambda cls, v: coerce_env(v)))

    @field_validator("honoured_by")
    @classmethod
    def _honoured(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                Requirement(v)
            except InvalidRequirement as exc:
                raise ValueError(
                    f"honoured_by must be a requirement like 'vllm<0.14': {exc}"
                ) from None
        return v

    @model_validator(mode="after")
    def _one_variable(self) -> Arm:
        changes = self.changes()
        if not changes:
            raise ValueError("an arm must change something: give env, pin, flag or leg")
        if len(changes) > 1 and not self.compound:
            raise ValueError(
                f"arm {self.name!r} changes {len(changes)} things ({', '.join(changes)}); "
                "an arm changes exactly one variable: split it, or declare 'compound: true'"
            )
        return self

    def changes(self) -> list[str]:
        out = [f"env {k}={v}" for k, v in self.env.items()]
        out += [f"pin {p}" for p in self.pin]
        out += [f"flag {f}" for f in self.flag]
        if self.leg:
            out.append(f"leg {self.leg}")
        return out

    @property
    def kind(self) -> ArmKind:
        if self.leg:
            return ArmKind.LEG
        if self.pin:
            return ArmKind.PIN
        if self.flag:
            return ArmKind.FLAG
        return ArmKind.ENV

    @property
    def single_variable(self) -> bool:
        return len(self.changes()) == 1

    def describe(self) -> str:
        return "; ".join(self.changes())


def coerce_flags(v: object) -> object:
    """YAML flags (a string, a mapping or a list of them) → a list of :class:`Flag`."""
    items = [v] if isinstance(v, (str, dict)) else v
    if isinstance(items, (list, tuple)):
        return [Flag.parse(i) if isinstance(i, str) else i for i in items]
    return items


def coerce_env(v: object) -> object:
    """YAML env values (numbers, booleans) → the strings a process environment holds."""
    if isinstance(v, dict):
        return {str(k): _scalar(val) for k, val in v.items()}
    return v


def _scalar(v: object) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)
