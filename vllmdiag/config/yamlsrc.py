"""YAML with positions: load a file into plain data plus a map from key paths to
``line:col``, and turn pydantic errors into ``file:line:col: key.path: what is wrong``."""

from __future__ import annotations

import contextlib
import difflib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from vllmdiag.errors import ConfigError

Path_ = tuple[str | int, ...]


@dataclass
class Located:
    """Plain data from a YAML file and where each piece of it stands."""

    file: Path
    data: Any
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)

    def where(self, path: Path_, *, key: bool = False) -> str:
        """``file:line:col`` of the deepest known prefix of ``path`` (1-based)."""
        for n in range(len(path), -1, -1):
            prefix = path[:n]
            table = (self.keys, self.values) if key else (self.values, self.keys)
            for t in table:
                if prefix in t:
                    line, col = t[prefix]
                    return f"{self.file}:{line + 1}:{col + 1}"
        return f"{self.file}:1:1"

    def error(
        self, path: Path_, message: str, *, key: bool = False, hint: str | None = None
    ) -> ConfigError:
        dotted = dotted_path(path)
        text = f"{dotted}: {message}" if dotted else message
        return ConfigError(text, where=self.where(path, key=key), hint=hint)


def load_yaml(file: Path) -> Located:
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", where=str(file)) from None
    yaml = YAML(typ="rt")
    try:
        root = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else str(file)
        raise ConfigError(f"not valid YAML: {exc.problem}", where=where) from None
    located = Located(file, None)
    located.data = _walk(root, (), located)
    return located


def _walk(node: Any, path: Path_, out: Located) -> Any:
    if isinstance(node, CommentedMap):
        result: dict[str, Any] = {}
        for k, v in node.items():
            sub = (*path, str(k))
            try:
                out.keys[sub] = tuple(node.lc.key(k))
                out.values[sub] = tuple(node.lc.value(k))
            except (KeyError, TypeError):
                pass
            result[str(k)] = _walk(v, sub, out)
        return result
    if isinstance(node, CommentedSeq):
        items = []
        for i, v in enumerate(node):
            sub = (*path, i)
            with contextlib.suppress(KeyError, TypeError):
                out.values[sub] = tuple(node.lc.item(i))
            items.append(_walk(v, sub, out))
        return items
    return node


def dotted_path(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validate(model: type[BaseModel], located: Located, data: Any, *, base: Path_ = ()) -> Any:
    """``model.model_validate(data)`` with errors mapped back to the YAML source.

    All errors are reported at once (one per line) so a user fixes a file in one pass.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [_describe(model, located, base, err) for err in exc.errors()]
        first = problems[0]
        rest = [f"{p.where}: {p.message}" for p in problems[1:]]
        message = first.message + ("".join(f"\n{r}" for r in rest) if rest else "")
        raise ConfigError(message, where=first.where, hint=first.hint) from None


def _describe(model: type[BaseModel], located: Located, base: Path_, err: Any) -> ConfigError:
    loc: Path_ = (*base, *(p for p in err["loc"] if not _is_union_tag(p)))
    kind = err["type"]
    if kind == "extra_forbidden":
        name = str(loc[-1])
        allowed = fields_at(model, loc[len(base) : -1])
        close = difflib.get_close_matches(name, allowed, n=1)
        hint = (
            f"did you mean {close[0]!r}?"
            if close
            else (f"known keys here: {', '.join(sorted(allowed))}" if allowed else None)
        )
        return located.error(loc, f"unknown key {name!r}", key=True, hint=hint)
    if kind == "missing":
        return located.error(loc[:-1], f"missing required key {loc[-1]!r}", key=True)
    msg = str(err["msg"]).removeprefix("Value error, ")
    return located.error(loc, msg)


def _is_union_tag(part: Any) -> bool:
    # pydantic inserts the member type name into locs of union fields
    return isinstance(part, str) and (
        part.startswith(("function-", "tuple[", "list["))
        or part in {"str", "int", "float", "bool", "dict"}
    )


def fields_at(model: type[BaseModel], path: Path_) -> list[str]:
    """The keys a model accepts at ``path`` (for 'did you mean' on unknown keys)."""
    current: Any = model
    for part in path:
        current = _descend(current, part)
        if current is None:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or name for name, f in current.model_fields.items()]
    return []


def _descend(tp: Any, part: str | int) -> Any:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        info = tp.model_fields.get(str(part))
        if info is None:
            for name, f in tp.model_fields.items():
                if f.alias == part:
                    info = tp.model_fields[name]
        return _unwrap(info.annotation) if info is not None else None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (dict,) and len(args) == 2:
        return _unwrap(args[1])
    if origin in (tuple, list) and args:
        return _unwrap(args[0])
    return None


def _unwrap(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        for arg in typing.get_args(tp):
            if arg is not type(None):
                return _unwrap(arg)
    return tp
