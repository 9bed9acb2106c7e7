"""The layers of docs/architecture.md hold: the import contract in pyproject.toml
(``lint-imports``) passes, and it places every top-level package of vllmdiag."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import vllmdiag
from tests.support.paths import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: import-linter brings tomli
    import tomli as tomllib

PYPROJECT = REPO / "pyproject.toml"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["contracts"])


def test_the_import_contract_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    cli = pytest.importorskip("importlinter.cli")
    code = cli.lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 broken" in out


def test_every_top_level_package_has_a_layer() -> None:
    layers = next(c for c in _contracts() if c["type"] == "layers" and "containers" not in c)
    named = {
        name.strip()
        for layer in layers["layers"]  # type: ignore[attr-defined]
        for name in str(layer).split("|")
    }
    package = Path(vllmdiag.__file__).parent
    children = {
        f"vllmdiag.{p.stem}"
        for p in package.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert children - named == set(), "a package outside every layer of the contract"
    assert named - children == set(), "the contract names a package that is not there"


def _module_graph() -> dict[str, set[str]]:
    """vllmdiag's modules and what each imports of vllmdiag's own, every import counted:
    at the top, inside functions and under ``TYPE_CHECKING`` alike (a deferred import
    hides a circle from the interpreter, not from a reader). The probes are scripts a
    leg's python runs; only their package is a module here."""
    package = Path(vllmdiag.__file__).parent
    modules: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        if "probes" in path.relative_to(package).parts and path.name != "__init__.py":
            continue
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                subs = {f"{base}.{a.name}" for a in node.names} & modules.keys()
                graph[name] |= subs
                if len(subs) < len(node.names) and base in modules:
                    graph[name].add(base)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v] - {v}:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_round_a_circle() -> None:
    graph = _module_graph()
    assert len(graph) > 200 and graph["vllmdiag.jobs.matrix.job"], "the graph was read"
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"a", "b"}, "b": set()}) == []
