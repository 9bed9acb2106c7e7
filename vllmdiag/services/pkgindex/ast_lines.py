"""Cheap walks over a large module's AST: only the subtrees whose line span holds a line
of interest (one that names what is looked for), found by a regular expression first."""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator, Sequence

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def lines_matching(source: str, pattern: str) -> list[int]:
    """1-based numbers of the lines a match of ``pattern`` starts on."""
    out: list[int] = []
    line, pos = 1, 0
    for m in re.finditer(pattern, source):
        line += source.count("\n", pos, m.start())
        pos = m.start()
        if not out or out[-1] != line:
            out.append(line)
    return out


def near_lines(
    nodes: Sequence[ast.AST], lines: Sequence[int], *, scopes: bool
) -> Iterator[ast.AST]:
    """Nodes whose line span holds one of ``lines`` (sorted), or that have no span;
    ``scopes``: descend into nested function and class bodies too."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        first = getattr(node, "lineno", None)
        if first is not None:
            last = getattr(node, "end_lineno", None) or first
            at = bisect.bisect_left(lines, first)
            if at == len(lines) or lines[at] > last:
                continue
        yield node
        if not scopes and isinstance(node, SCOPES):
            kids: list[ast.AST] = list(getattr(node, "decorator_list", []))
            if isinstance(node, ast.ClassDef):
                kids += [*node.bases, *(k.value for k in node.keywords)]
            elif not isinstance(node, ast.Lambda):
                kids.append(node.args)
            stack.extend(reversed(kids))
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
