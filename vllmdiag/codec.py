"""The one encoder at the edge: typed values ⇄ JSON-able data.

Every result vllmdiag writes or prints (cell results, reports, events, env records) is a
frozen dataclass. Its JSON form comes from pydantic's ``TypeAdapter`` over the dataclass
itself, so there is no hand-written ``to_json`` to drift from the type, and reading a file
back gives the same typed value (``load(type(x), dump(x)) == x``; tests check the round
trip for every result type).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

T = TypeVar("T")

__all__ = ["ValidationError", "dump", "dumps", "load"]


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(cls: Any) -> TypeAdapter[Any]:
    """One adapter per type, built on first use (building one costs milliseconds)."""
    found = _ADAPTERS.get(cls)
    if found is None:
        found = _ADAPTERS[cls] = TypeAdapter(cls)
    return found


def dump(value: Any) -> Any:
    """``value`` (a dataclass, enum, path, tuple, ...) as plain JSON-able data."""
    return _adapter(type(value)).dump_python(value, mode="json")


def dumps(value: Any, *, indent: int | None = 2) -> str:
    return json.dumps(dump(value), indent=indent, ensure_ascii=False)


def load(cls: type[T], data: Any) -> T:
    """``data`` (as :func:`dump` wrote it) back as a ``cls``; a mismatch raises
    :class:`ValidationError`."""
    value: T = _adapter(cls).validate_python(data)
    return value
