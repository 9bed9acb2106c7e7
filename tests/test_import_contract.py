"""The layers of docs/architecture.md hold: the import contract in pyproject.toml
(``lint-imports``) passes, and it places every top-level package of vllmdiag."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import vllmdiag

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: import-linter brings tomli
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
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
