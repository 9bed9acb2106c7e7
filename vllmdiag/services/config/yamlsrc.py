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
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

from vllmdiag.errors import ConfigError
from vllmdiag.services.config.source import read_text

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


#: A recipe has hundreds of values; YAML aliases that expand exponentially (the
#: "billion laughs") would have billions. Both limits stop them at once.
MAX_VALUES = 100_000
MAX_DEPTH = 64


def load_yaml(file: Path, *, what: str = "file") -> Located:
    root = parse_yaml(read_text(file, what=what), file)
    located = Located(file, None)
    located.data = _Walk(located).walk(root, ())
    return located


def load_commented(file: Path, *, what: str = "file") -> Any:
    """The file's round-trip tree (``CommentedMap``/``CommentedSeq`` with positions),
    under the same limits as :func:`load_yaml`: a bounded regular file, 64 levels, no
    alias bombs, every scalar buildable."""
    root = parse_yaml(read_text(file, what=what), file)
    _Walk(Located(file, None)).walk(root, ())
    return root


def parse_yaml(text: str, file: Path) -> Any:
    """YAML text to its round-trip tree; every way it can fail is a :class:`ConfigError`
    naming ``file`` (and the place, where one is known)."""
    try:
        _prescan(text, file)
        root = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        raise ConfigError(
            f"not valid YAML: {exc.problem}", where=_mark(file, exc.problem_mark)
        ) from None
    except YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", where=str(file)) from None
    except RecursionError:
        raise ConfigError(
            f"not valid here: nested more than {MAX_DEPTH} levels deep",
            where=str(file),
            hint="a recipe nests a few levels; is this the right file?",
        ) from None
    except (ValueError, KeyError, AssertionError, TypeError, OverflowError) as exc:
        # ruamel's constructors raise these, without a position, for a scalar its tag
        # cannot hold (2026-02-30, !!int abc, !!bool maybe, 5,000 digits, !!omap twice)
        raise scalar_error(text, file, exc) from None
    return root


def _prescan(text: str, file: Path) -> None:
    """Depth and recursive aliases, from the event stream (the parser is iterative;
    composing 50,000 nested lists would exhaust the stack first)."""
    depth = 0
    open_anchors: list[str | None] = []
    for ev in YAML(typ="rt").parse(text):
        if isinstance(ev, CollectionStartEvent):
            depth += 1
            open_anchors.append(ev.anchor)
            if depth > MAX_DEPTH:
                raise ConfigError(
                    f"nested more than {MAX_DEPTH} levels deep",
                    where=_mark(file, ev.start_mark),
                    hint="a recipe nests a few levels; is this the right file?",
                )
        elif isinstance(ev, CollectionEndEvent):
            depth -= 1
            open_anchors.pop()
        elif isinstance(ev, AliasEvent) and ev.anchor in open_anchors:
            raise ConfigError(
                f"the alias *{ev.anchor} is inside the value its anchor &{ev.anchor} marks "
                "(a recursive alias)",
                where=_mark(file, ev.start_mark),
                hint="an alias can only repeat a value that is complete where it is used",
            )


#: What a YAML tag makes of a scalar, for "cannot read ... as <this>".
_TAG_KINDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "timestamp": "a date (YYYY-MM-DD)",
    "binary": "base64 bytes",
    "omap": "an ordered map",
    "pairs": "a list of pairs",
    "set": "a set",
}
#: CPython refuses to turn longer digit strings into an int (CVE-2020-10735).
MAX_INT_DIGITS = 4300


def scalar_error(text: str, file: Path, exc: BaseException) -> ConfigError:
    """The value that the constructor could not build, found by building the composed
    tree's typed nodes one at a time: its ``file:line:col``, key path and what it was
    meant to be."""
    yaml = YAML(typ="rt")
    root = yaml.compose(text)
    stack: list[tuple[Any, Path_]] = [(root, ())] if root is not None else []
    while stack:
        node, path = stack.pop()
        tag = str(getattr(node.tag, "value", node.tag) or "")
        kind = _TAG_KINDS.get(tag.rsplit(":", 1)[-1]) if tag.startswith("tag:yaml.org") else None
        if kind is not None:
            try:
                YAML(typ="rt").constructor.construct_object(node, deep=True)
            except (ValueError, KeyError, AssertionError, TypeError, OverflowError) as bad:
                return _scalar_problem(file, node, path, kind, bad)
        if isinstance(node, MappingNode):
            for k, v in reversed(node.value):
                stack.append((v, (*path, str(getattr(k, "value", k)))))
        elif isinstance(node, SequenceNode):
            stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(node.value))))
    return ConfigError(f"not valid YAML: {type(exc).__name__}: {exc}", where=str(file))


def _scalar_problem(
    file: Path, node: Any, path: Path_, kind: str, exc: BaseException
) -> ConfigError:
    where = _mark(file, node.start_mark)
    dotted = dotted_path(path)
    head = f"{dotted}: " if dotted else ""
    if isinstance(node, ScalarNode):
        value = str(node.value)
        shown = repr(value if len(value) <= 40 else value[:37] + "...")
        digits = sum(c.isdigit() for c in value)
        if kind == "an integer" and digits > MAX_INT_DIGITS:
            why = f"{digits:,} digits, more than the {MAX_INT_DIGITS:,} an integer may have"
        elif isinstance(exc, KeyError):
            why = "not a value this tag knows"
        else:
            why = str(exc) or type(exc).__name__
        return ConfigError(
            f"{head}cannot read {shown} as {kind}: {why}",
            where=where,
            hint="write a real value, or quote it to keep it as text"
            + (" (a date is YYYY-MM-DD with a real month and day)" if "date" in kind else ""),
        )
    return ConfigError(
        f"{head}not valid as {kind}: a key appears twice or an item is not a single pair",
        where=where,
        hint="give each key once",
    )


def _mark(file: Path, mark: Any) -> str:
    return f"{file}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(file)


class _Walk:
    """CommentedMap/Seq → plain data, with positions, counting every value an alias
    expands to and refusing an alias that contains itself."""

    def __init__(self, out: Located) -> None:
        self.out = out
        self.values = 0
        self.open: set[int] = set()

    def walk(self, node: Any, path: Path_) -> Any:
        self.values += 1
        if self.values > MAX_VALUES:
            raise self.out.error(
                path,
                f"the document expands to more than {MAX_VALUES:,} values",
                hint="YAML aliases (*name) that refer to lists of aliases expand "
                "exponentially; write the values out, or use fewer levels of aliases",
            )
        if len(path) > MAX_DEPTH:
            raise self.out.error(path, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, str):
            if "\x00" in node:
                raise self.out.error(
                    path,
                    "contains a NUL character (\\0), which no command line or "
                    "environment variable can carry",
                )
            return node
        if isinstance(node, TaggedScalar) or (
            isinstance(node, (CommentedMap, CommentedSeq))
            and node.tag.value is not None
            and not str(node.tag.value).startswith("tag:yaml.org")
        ):
            tag = getattr(node.tag, "value", None) or "?"
            raise self.out.error(
                path,
                f"the YAML tag {tag} is not understood here",
                hint="remove the tag; write plain values (text, numbers, lists, maps)",
            )
        if not isinstance(node, (CommentedMap, CommentedSeq)):
            return node
        if id(node) in self.open:
            raise self.out.error(
                path,
                "a YAML alias refers to a node that contains it (a recursive alias)",
                hint="an alias (*name) cannot appear inside the value its anchor (&name) marks",
            )
        self.open.add(id(node))
        try:
            if isinstance(node, CommentedMap):
                return self._map(node, path)
            return self._seq(node, path)
        finally:
            self.open.discard(id(node))

    def _map(self, node: CommentedMap, path: Path_) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for k, v in node.items():
            sub = (*path, "~" if k is None else str(k))
            if k is None or isinstance(k, (CommentedMap, CommentedSeq, list, tuple, dict)):
                with contextlib.suppress(KeyError, TypeError):
                    self.out.keys[sub] = tuple(node.lc.key(k))
                raise self.out.error(
                    sub,
                    "a key is empty (~ or null)" if k is None else "a key is a list or map",
                    key=True,
                    hint="write the name as text (quote it: '~' or 'null' if that is the name)",
                )
            try:
                self.out.keys[sub] = tuple(node.lc.key(k))
                self.out.values[sub] = tuple(node.lc.value(k))
            except (KeyError, TypeError):
                pass
            if "\x00" in str(k):
                raise self.out.error(sub, "a key contains a NUL character (\\0)", key=True)
            result[str(k)] = self.walk(v, sub)
        return result

    def _seq(self, node: CommentedSeq, path: Path_) -> list[Any]:
        items = []
        for i, v in enumerate(node):
            sub = (*path, i)
            with contextlib.suppress(KeyError, TypeError):
                self.out.values[sub] = tuple(node.lc.item(i))
            items.append(self.walk(v, sub))
        return items


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
