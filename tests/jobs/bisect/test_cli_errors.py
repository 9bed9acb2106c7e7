"""Every mistake a user can make with ``bisect``, through the CLI in-process: one line
saying what was wrong and where (then a hint), exit 1, no traceback, nothing but (at
most) one JSON object on stdout; argument mistakes answer before any network work."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.support.cli import assert_user_error
from vllmdiag.cli.app import app
from vllmdiag.services.pkgindex import clear_caches

ENDS = ["--good", "21.0", "--bad", "23.0"]
CHECK = ["--", "python", "-c", "import packaging.version as v; v.LegacyVersion"]

RECIPE = """\
name: legacy-version
question: Which packaging release dropped LegacyVersion?
legs:
  plain:
    requirements: [packaging]
baseline:
  leg: plain
workloads:
  legacy:
    command: ["{python}", "-c", "import packaging.version as v; v.LegacyVersion"]
arms: []
repeats: 1
timeout: 120
"""


def run(*args: str) -> tuple[Result, float]:
    start = time.monotonic()
    result = CliRunner().invoke(app, ["bisect", *args])
    return result, time.monotonic() - start


OFFLINE = [
    (["packaging", "--bad", "23.0", *CHECK], "--good", "missing option"),
    (["packaging", "--good", "21.0", *CHECK], "--bad", "missing option"),
    ([*ENDS, *CHECK], "PKG", "missing argument 'PKG' before --"),
    (["packaging", *ENDS], None, "no check to run"),
    (["packaging", *ENDS, "python", "-c", "x"], None, "no such option: -c: the check command"),
    (["packaging", *ENDS, "pytest", "tests"], None, "the check command ('pytest tests') must"),
    (["packaging", "--good", "21.x", "--bad", "23.0", *CHECK], "--good", "not a version: '21.x'"),
    (["packaging", "--good", "21.0", "--bad", "next", *CHECK], "--bad", "not a version: 'next'"),
    (["packaging", "--good", "21.0", "--bad", "21.0", *CHECK], "--bad", "are the same version"),
    (["packaging>=21", *ENDS, *CHECK], "PKG", "carries a version range"),
    (["pack aging", *ENDS, *CHECK], "PKG", "not a requirement"),
    (["packaging", *ENDS, "--metric", "score", *CHECK], "--threshold", "go together"),
    (["packaging", *ENDS, "--threshold", "0.9", *CHECK], "--metric", "go together"),
    (["packaging", *ENDS, "--metric", "s", "--threshold", "0", *CHECK], "--threshold", "ratio"),
    (["packaging", *ENDS, "--threshold", "x", *CHECK], "--threshold", "invalid value"),
    (["packaging", *ENDS, "--repeat", "0", *CHECK], "--repeat", "invalid value"),
    (["packaging", *ENDS, "--timeout", "0", *CHECK], "--timeout", "no time"),
    (["packaging", *ENDS, "--with", "numpy=2", *CHECK], "--with", "not a requirement"),
    (["packaging", *ENDS, "--exclude-newer", "soon", *CHECK], "--exclude-newer", "not a date"),
    (["packaging", *ENDS, "--python", "py3", *CHECK], "--python", "not a Python version"),
    (["packaging", *ENDS, "--recipe", "r.yaml"], "--cell", "go together"),
    (["packaging", *ENDS, "--cell", "legacy"], "--recipe", "go together"),
]


@pytest.mark.parametrize(("args", "where", "fragment"), OFFLINE)
def test_argument_errors_answer_at_once_without_the_index(
    args: list[str], where: str | None, fragment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UV_DEFAULT_INDEX", "http://127.0.0.1:9/simple")
    clear_caches()
    for extra in ([], ["--json"]):
        at = args.index("--") if "--" in args else len(args)
        result, took = run(*args[:at], *extra, *args[at:])
        assert_user_error(result, where, fragment)
        assert took < 1.0


def test_without_dashes_the_hint_shows_where_the_check_goes() -> None:
    result, _ = run("packaging", *ENDS, "python", "-c", "import packaging")
    hint = assert_user_error(result, None, "the check command goes after --")
    assert "-- python -c" in hint
    # ... and a check option that bisect also has is never taken as bisect's.
    result, _ = run("packaging", *ENDS, "python", "check.py", "--json")
    assert_user_error(result, None, "('python check.py') must follow --")


def test_recipe_mistakes(tmp_path: Path) -> None:
    recipe = tmp_path / "legacy.yaml"
    recipe.write_text(RECIPE)
    result, _ = run("packaging", *ENDS, "--recipe", str(recipe), "--cell", "legacy", "--", "true")
    assert_user_error(result, None, "not both")
    result, _ = run("packaging", *ENDS, "--recipe", str(recipe), "--cell", "legazy")
    assert_user_error(result, None, "no cell 'legazy'")
    args = ["--recipe", str(recipe), "--cell", "legacy", "--python", "3.11"]
    result, _ = run("packaging", *ENDS, *args)
    assert_user_error(result, None, "come from the recipe here")
    result, _ = run("packaging", *ENDS, "--recipe", str(tmp_path / "none.yaml"), "--cell", "x")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "none.yaml" in result.stderr.splitlines()[0]


@pytest.mark.network
def test_what_the_index_does_not_have() -> None:
    result, took = run("no-such-package-vllmdiag-x", *ENDS, "--", "true")
    assert_user_error(result, "PKG", "no project 'no-such-package-vllmdiag-x' on the index")
    assert took < 5
    result, _ = run("packaging", "--good", "21.0", "--bad", "99.0", "--", "true")
    hint = assert_user_error(result, "--bad", "packaging==99.0 is not an installable release")
    assert re.search(r"releases near it: [\d.]+, ", hint)


def test_help_reads_as_words_and_every_option_has_help() -> None:
    result = CliRunner().invoke(app, ["bisect", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = result.stdout
    assert not re.search(r"<(str|bool|int|float|list|path)\b|list\[", text), text
    assert "-- CHECK" in text
    for metavar in ("PKG", "VERSION", "REQUIREMENT", "RATIO", "SECONDS", "FILE", "ID"):
        assert metavar in text
    options = re.findall(r"^\W*(--[a-z-]+)\s+(.*)$", text, re.M)
    assert {o for o, _ in options} >= {"--good", "--bad", "--with", "--fresh", "--json"}
    assert all(rest.strip() for _, rest in options)
