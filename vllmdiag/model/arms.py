"""Arms: single-variable changes to a baseline.

An arm changes exactly one of: an environment variable (``env``), a dependency pin
(``pin``), a CLI flag (``flag``), or the whole runtime stack (``leg``, a control). An arm
that changes more than one thing must say ``compound: true``; the verdict then never
calls it single-variable.
"""

from __future__ import annotations

import difflib
import re
import shlex
from enum import Enum

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from vllmdiag.model.fingerprint import Fingerprint


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
        try:
            tokens = shlex.split(text)
        except ValueError as exc:
            raise ValueError(f"cannot split {text!r} into words: {exc}") from None
        if not tokens or not tokens[0].startswith("-"):
            raise ValueError(f"a flag starts with '-': {text!r}")
        name, eq, inline = tokens[0].partition("=")
        if eq and len(tokens) == 1:
            return cls(name=name, value=inline)
        second = tokens[1] if len(tokens) > 1 else ""
        if len(tokens) > 2 or (eq and second) or looks_like_flag(second):
            raise ValueError(
                f"{text!r} is more than one flag, and an arm changes one thing: split it "
                "into two arms, or list the flags (flag: [--a, --b]) with 'compound: true'"
                + (
                    f"; if {tokens[1]!r} really is the value, write "
                    f"{{name: {tokens[0]}, value: {tokens[1]!r}}}"
                    if len(tokens) == 2
                    else ""
                )
            )
        return cls(name=name, value=tokens[1] if len(tokens) == 2 else None)

    @field_validator("name", "value")
    @classmethod
    def _no_nul(cls, v: str | None) -> str | None:
        if v is not None and "\x00" in v:
            raise ValueError("a flag cannot contain a NUL character")
        return v

    @field_validator("name")
    @classmethod
    def _dashed(cls, v: str) -> str:
        if not v.startswith("-") or any(c.isspace() for c in v):
            raise ValueError(f"a flag name starts with '-' and has no spaces: {v!r}")
        return v

    def argv(self) -> list[str]:
        return [self.name] if self.value is None else [self.name, self.value]

    def __str__(self) -> str:
        return " ".join(self.argv())


class Arm(BaseModel):
    """A named change with the hypothesis it falsifies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: At most 100 characters, like leg and workload names: a cell id
    #: ``r<repeat>.<arm>.<workload>`` must stay one path component (255 bytes).
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$", max_length=100)
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

    @field_validator("fingerprint_field")
    @classmethod
    def _known_field(cls, v: str | None) -> str | None:
        """A field the run fingerprint does not have would silently switch the inert
        check off: refuse it, with the fields there are."""
        if v is not None and v not in Fingerprint.field_names():
            close = difflib.get_close_matches(v, Fingerprint.field_names(), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(
                f"fingerprint_field {v!r} is not a field of the run fingerprint; {hint}"
                f"fields: {', '.join(Fingerprint.field_names())}"
            )
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


def looks_like_flag(token: str) -> bool:
    """``--foo`` or ``-x`` is a flag; ``-1`` or ``-0.5`` is a (negative) value."""
    return token.startswith("-") and len(token) > 1 and not token[1:2].isdigit() and token != "--"


def coerce_env(v: object) -> object:
    """YAML env values (numbers, booleans) → the strings a process environment holds;
    names and values a process environment cannot hold are refused here, not at run time."""
    if isinstance(v, dict):
        out = {str(k): _scalar(val) for k, val in v.items()}
        for key, val in out.items():
            check_env_item(key, val)
        return out
    return v


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_env_item(key: str, value: str) -> None:
    if not key:
        raise ValueError("an environment variable needs a name")
    if "=" in key:
        raise ValueError(f"{key!r} is not a variable name: it contains '=' (write {{NAME: value}})")
    if not _ENV_NAME.match(key):
        raise ValueError(
            f"{key!r} is not a variable name: use letters, digits and '_', not starting "
            "with a digit (a name a shell can set, so the printed command pastes safely)"
        )
    if "\x00" in key or "\x00" in value:
        raise ValueError(f"{key!r}: an environment variable cannot hold a NUL character")


def _scalar(v: object) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if v is None:
        raise ValueError("a variable without a value: write '' for an empty string")
    if isinstance(v, (dict, list, tuple, bytes, bytearray)):
        raise ValueError(f"a variable's value is a string or a number, not {v!r}")
    return str(v)
