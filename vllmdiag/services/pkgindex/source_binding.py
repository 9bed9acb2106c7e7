"""Does a module's source bind ``ATTR``? A sound static read, pure (``ast``, no import).

"present" only when the module surely binds the name when it is imported: a ``class``,
``def``, assignment or import of it at module level, or in every branch that can run.
"absent" only when nothing in the module can bind it: no binding at all, no star import,
no module ``__getattr__``, no ``global`` declaration of it, no ``globals()``/``vars()``/
``exec``/``eval``, no ``sys.modules`` games and no string that names it (``setattr``,
``globals()["X"]``, ``__all__`` entries). Anything else is undecided, with the reason,
and goes to an import. :func:`parent_touches` reads the parent packages' ``__init__``
files, which run first and could set or delete the attribute from outside.

What is not read: other modules that patch this one from outside (``core.X = ...`` in a
sibling). That is why a static answer is a hint: every change it predicts is checked by
a real import on both sides.
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from vllmdiag.services.pkgindex.ast_lines import SCOPES, lines_matching, near_lines

_DYNAMIC_CALLS = {"globals", "vars", "exec", "eval"}
# Some CPython releases (3.11.7 among them; CPython gh-106905) keep the AST converter's
# recursion depth in state their threads share: two ast.parse calls at once can fail with
# "AST constructor recursion depth mismatch" (a SystemError, seen here in a window run).
# Wheels are read in threads, so parses take turns; a parse outside vllmdiag (Python's
# traceback module parses source lines for its carets) can still cross one: it is retried.
_PARSE = threading.Lock()
_NON_SUPPRESSING = {"catch_warnings"}
# Text that a dynamic binding cannot do without (a superset: a match only means "look").
_DYNAMIC_TEXT = r"\b(?:globals|vars|exec|eval|modules|__getattr__)\b|\bimport[\s\\(]*\*"


@dataclass(frozen=True)
class Reading:
    """``has``: True present, False absent, None undecided; ``why`` says where or why not."""

    has: bool | None
    why: str


def _parse(source: str) -> ast.Module:
    for attempt in range(_PARSE_TRIES):
        try:
            with _PARSE:
                return ast.parse(source)
        except SystemError as exc:  # another thread's parse (a traceback's carets) crossed
            if "recursion depth mismatch" not in str(exc) or attempt == _PARSE_TRIES - 1:
                raise
    raise AssertionError("unreachable")


_PARSE_TRIES = 5


def module_binds(source: str, attr: str, *, filename: str = "<module>") -> Reading:
    # Only code on lines that name ``attr`` or a dynamic construct can matter: with none,
    # nothing binds it (no parse needed); else the walks below skip every subtree without
    # such a line (a 200 kB module costs its parse, ~50 ms, not 150).
    named = lines_matching(source, rf"\b{re.escape(attr)}\b")
    lines = sorted(set(named) | set(lines_matching(source, _DYNAMIC_TEXT)))
    if not lines:
        return Reading(False, f"nothing in {filename} binds {attr}")
    try:
        tree = _parse(source)
    except (SyntaxError, ValueError) as exc:
        return Reading(None, f"{filename} does not parse here ({exc.__class__.__name__})")
    deleted = _deleted(tree, attr, named)
    if deleted is not None:
        return Reading(None, f"{filename}:{deleted} deletes {attr}")
    swapped = next(
        (n for n in near_lines(tree.body, lines, scopes=True) if _reaches_itself(n)), None
    )
    if swapped is not None:  # what the import returns may not be this module's namespace
        return Reading(None, f"{filename}:{getattr(swapped, 'lineno', 0)} uses sys.modules")
    sure = _surely(tree.body, attr)
    if sure is not None:
        return Reading(True, f"{_kind(sure, attr)} {attr} at {filename}:{sure.lineno}")
    maybe = next(_stores(tree.body, attr, named), None)
    if maybe is not None:
        return Reading(None, f"{filename}:{maybe} binds {attr} only on some paths")
    dynamic = _dynamic(tree, attr, lines)
    if dynamic is not None:
        return Reading(None, f"{filename}:{dynamic}")
    return Reading(False, f"nothing in {filename} binds {attr}")


def parent_touches(source: str, attr: str, *, filename: str = "<parent>") -> str | None:
    """Why a parent package's ``__init__`` may set or delete ``attr`` on the module (or
    swap the module), else None."""
    lines = lines_matching(source, rf"\b(?:{re.escape(attr)}|modules)\b")
    if not lines:
        return None  # neither the name nor sys.modules: nothing to look at
    try:
        tree = _parse(source)
    except (SyntaxError, ValueError):
        return f"{filename} does not parse here"
    for node in near_lines(tree.body, lines, scopes=True):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == attr
            and isinstance(node.ctx, (ast.Store, ast.Del))
        ):
            return f"{filename}:{node.lineno} sets or deletes .{attr} from outside"
        if _named_setattr(node, attr):
            return f"{filename}:{getattr(node, 'lineno', 0)} calls setattr/delattr on {attr!r}"
        if _sys_modules_store(node):
            return f"{filename}:{getattr(node, 'lineno', 0)} replaces a module in sys.modules"
    return None


def _kind(node: ast.stmt, attr: str) -> str:
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "def"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "import of"
    return "assignment to" if not isinstance(node, (ast.If, ast.Try)) else "every branch binds"


def _surely(body: Sequence[ast.stmt], attr: str) -> ast.stmt | None:
    """The first statement of ``body`` after which ``attr`` is surely bound."""
    for stmt in body:
        if _binds_directly(stmt, attr):
            return stmt
        if isinstance(stmt, ast.If) and _surely(stmt.body, attr) and _surely(stmt.orelse, attr):
            return stmt
        if isinstance(stmt, ast.Try) and _try_surely(stmt, attr):
            return stmt
        if isinstance(stmt, (ast.With, ast.AsyncWith)) and all(
            _non_suppressing(item.context_expr) for item in stmt.items
        ):
            inner = _surely(stmt.body, attr)
            if inner is not None:
                return inner
    return None


def _try_surely(stmt: ast.Try, attr: str) -> bool:
    if _surely(stmt.finalbody, attr):
        return True
    done = _surely(stmt.body, attr) or _surely(stmt.orelse, attr)
    handled = all(
        _surely(h.body, attr) or (h.body and isinstance(h.body[-1], ast.Raise))
        for h in stmt.handlers
    )
    return bool(done) and handled


def _non_suppressing(expr: ast.expr) -> bool:
    func = expr.func if isinstance(expr, ast.Call) else None
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name in _NON_SUPPRESSING


def _binds_directly(stmt: ast.stmt, attr: str) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name == attr
    if isinstance(stmt, ast.Import):
        return any((a.asname or a.name.split(".")[0]) == attr for a in stmt.names)
    if isinstance(stmt, ast.ImportFrom):
        return any((a.asname or a.name) == attr for a in stmt.names if a.name != "*")
    if isinstance(stmt, ast.Assign):
        return any(attr in _target_names(t) for t in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return stmt.value is not None and attr in _target_names(stmt.target)
    return False


def _target_names(target: ast.expr) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(t) for t in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


def _stores(body: Sequence[ast.stmt], attr: str, lines: Sequence[int]) -> Iterator[int]:
    """Lines where module-scope code may bind ``attr`` (on any path)."""
    nodes = list(near_lines(body, lines, scopes=False))
    bare = {  # ``X: T`` without a value binds nothing
        id(n.target) for n in nodes if isinstance(n, ast.AnnAssign) and n.value is None
    }
    for node in nodes:
        if id(node) in bare:
            continue
        if (
            (isinstance(node, ast.Name) and node.id == attr and isinstance(node.ctx, ast.Store))
            or (isinstance(node, SCOPES[:3]) and node.name == attr)
            or (isinstance(node, (ast.Import, ast.ImportFrom)) and _binds_directly(node, attr))
            or (isinstance(node, ast.ExceptHandler) and node.name == attr)
            or (isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == attr)
            or (isinstance(node, ast.MatchMapping) and node.rest == attr)
        ):
            yield node.lineno


def _deleted(tree: ast.Module, attr: str, lines: Sequence[int]) -> int | None:
    for node in near_lines(tree.body, lines, scopes=False):
        if isinstance(node, ast.Name) and node.id == attr and isinstance(node.ctx, ast.Del):
            return node.lineno
    for node in near_lines(tree.body, lines, scopes=True):
        if _named_setattr(node, attr, only=("delattr",)):
            return getattr(node, "lineno", 0)
    return None


def _dynamic(tree: ast.Module, attr: str, lines: Sequence[int]) -> str | None:
    """Why the module may bind ``attr`` in a way no static read can follow, else None."""
    for node in near_lines(tree.body, lines, scopes=False):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return f"{node.lineno} star-imports from {'.' * node.level}{node.module or ''}"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__":
            return f"{node.lineno} defines a module __getattr__"
        if isinstance(node, ast.Name) and node.id == "__getattr__" and _stored(node):
            return f"{node.lineno} binds a module __getattr__"
    nodes = list(near_lines(tree.body, lines, scopes=True))
    notes = _annotation_strings(nodes)
    for node in nodes:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Global) and attr in node.names:
            return f"{line} declares {attr} global in a function"
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Name) and func.id in _DYNAMIC_CALLS:
            return f"{line} calls {func.id}()"
        if _named_setattr(node, attr):
            return f"{line} calls setattr/delattr on {attr!r}"
        if isinstance(node, ast.Constant) and node.value == attr and id(node) not in notes:
            return f"{line} names {attr!r} in a string"
    return None


def _annotation_strings(nodes: Sequence[ast.AST]) -> set[int]:
    """ids of string constants inside annotations: forward references, not bindings."""
    roots: list[ast.AST] = []
    for node in nodes:
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(c) for r in roots for c in ast.walk(r) if isinstance(c, ast.Constant)}


def _stored(node: ast.Name) -> bool:
    return isinstance(node.ctx, ast.Store)


def _named_setattr(
    node: ast.AST, attr: str, only: tuple[str, ...] = ("setattr", "delattr")
) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    if node.func.id not in only or len(node.args) < 2:
        return False
    name = node.args[1]
    return isinstance(name, ast.Constant) and name.value == attr


def _is_sys_modules(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "modules"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def _sys_modules_store(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, (ast.Store, ast.Del))
        and _is_sys_modules(node.value)
    )


def _reaches_itself(node: ast.AST) -> bool:
    return _sys_modules_store(node) or _own_module_lookup(node)


def _own_module_lookup(node: ast.AST) -> bool:
    """``sys.modules[__name__]`` (or ``.get(__name__)``): the module reaching itself."""
    if isinstance(node, ast.Subscript) and _is_sys_modules(node.value):
        return isinstance(node.slice, ast.Name) and node.slice.id == "__name__"
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
        return False
    first = node.args[0]
    return (
        _is_sys_modules(node.func.value) and isinstance(first, ast.Name) and first.id == "__name__"
    )
