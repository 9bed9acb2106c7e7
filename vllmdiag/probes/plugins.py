"""Report what in a leg can change vLLM behind a recipe's back (stdlib only; never imports
vllm unless asked to, and only as a fallback).

Prints one JSON object: the vLLM version, entry points in the ``vllm.*`` groups and their
distributions, who owns ``<env>/bin/vllm``, the flashinfer family's versions, and the
environment variable names this vLLM knows, read from the source of ``vllm/envs.py`` with
``ast`` (``environment_variables = {...}``, or the pydantic-settings registry of newer
versions).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

FLASHINFER = ("flashinfer-python", "flashinfer-jit-cache", "flashinfer-cubin")


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def dist_name(dist: Any) -> str | None:
    try:
        name = dist.metadata["Name"]
    except (KeyError, TypeError):
        return None
    return str(name) if name else None


def plugin_entry_points() -> list[dict[str, Any]]:
    out = []
    for dist in metadata.distributions():
        try:
            eps = list(dist.entry_points)
        except Exception:  # a broken dist-info must not hide the others
            continue
        for ep in eps:
            if ep.group.startswith("vllm."):
                out.append(
                    {
                        "group": ep.group,
                        "name": ep.name,
                        "value": ep.value,
                        "distribution": dist_name(dist),
                    }
                )
    return out


def script_owners() -> dict[str, Any]:
    script = Path(sys.prefix) / "bin" / "vllm"
    owners, declared = [], []
    target = script.resolve() if script.exists() else script
    for dist in metadata.distributions():
        name = dist_name(dist)
        try:
            for ep in dist.entry_points:
                if ep.group == "console_scripts" and ep.name == "vllm":
                    declared.append(name)
        except Exception:
            pass
        for f in dist.files or []:
            if f.name != "vllm" or "bin" not in f.parts:
                continue
            try:
                if Path(f.locate()).resolve() == target:
                    owners.append(name)
            except OSError:
                pass
    return {
        "path": str(script),
        "exists": script.exists(),
        "owners": sorted(set(owners)),
        "declared_by": sorted(set(declared)),
    }


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _dict_keys(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if (
            isinstance(target, ast.Name)
            and target.id == "environment_variables"
            and isinstance(value, ast.Dict)
        ):
            names.update(k for k in (_const_str(k) for k in value.keys) if k)
    return names


def _settings_fields(tree: ast.AST) -> set[str]:
    """Newer vLLM: pydantic-settings classes with an env_prefix; a field's variable is its
    alias, the first of its validation aliases, or prefix + NAME."""
    names = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        prefix = None
        for stmt in cls.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call):
                tgt = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
                if isinstance(tgt, ast.Name) and tgt.id == "model_config":
                    for kw in stmt.value.keywords:
                        if kw.arg == "env_prefix":
                            prefix = _const_str(kw.value)
        if prefix is None:
            continue
        for stmt in cls.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            field = stmt.target.id
            if field == "model_config" or field.startswith("_"):
                continue
            name: str | None = None
            if isinstance(stmt.value, ast.Call):
                for kw in stmt.value.keywords:
                    if kw.arg == "alias":
                        name = _const_str(kw.value) or name
                    elif kw.arg == "validation_alias" and name is None:
                        v = kw.value
                        first = v.args[0] if isinstance(v, ast.Call) and v.args else v
                        name = _const_str(first)
            names.add(name or prefix + field.upper())
    return names


def env_sources(pkg_dir: Path) -> list[Path]:
    single = pkg_dir / "envs.py"
    if single.is_file():
        return [single]
    package = pkg_dir / "envs"
    return sorted(package.rglob("*.py")) if package.is_dir() else []


def known_env_vars(allow_import: bool) -> tuple[list[str] | None, str | None]:
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None, None
    pkg_dir = Path(next(iter(spec.submodule_search_locations)))
    names = set()
    for src in env_sources(pkg_dir):
        try:
            tree = ast.parse(src.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        names |= _dict_keys(tree)
        names |= _settings_fields(tree)
    if names:
        return sorted(names), "ast"
    if allow_import:
        try:
            envs = importlib.import_module("vllm.envs")
            return sorted(envs.environment_variables), "import"
        except Exception as exc:
            return None, f"import failed: {exc!r}"[:300]
    return None, "no environment_variables found in vllm/envs source"


def main() -> None:
    allow_import = "--import" in sys.argv
    known, how = known_env_vars(allow_import)
    out = {
        "python": sys.executable,
        "prefix": sys.prefix,
        "vllm": version("vllm"),
        "plugins": plugin_entry_points(),
        "vllm_script": script_owners(),
        "flashinfer": {d: version(d) for d in FLASHINFER},
        "known_env_vars": known,
        "known_env_vars_source": how,
        "vllm_plugins_env": os.environ.get("VLLM_PLUGINS"),
    }
    print(json.dumps(out))


main()
