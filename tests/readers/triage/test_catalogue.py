"""The catalogue: next steps that run, files that load or say clearly why not, and
patterns that cannot hang triage."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from tests.support.paths import FIXTURES, REPO
from vllmdiag.cli.app import app
from vllmdiag.errors import ConfigError
from vllmdiag.readers.triage import Catalogue, triage_file
from vllmdiag.services.regexguard import nested_repeat

ROOT = REPO
LOGS = FIXTURES / "logs"
#: What the catalogue's metavariables stand for in a user's hands.
USER = {"RECIPE": "recipes/thrmma-cpu.yaml", "LEG": "vllm-0.18.0", "ARM": "enforce-eager"}
#: Values for the entries' named groups and {vllm_version}.
VALUES = {"vllm_version": "0.18.0", "model_type": "gemma4", "arch": "Gemma4ForCausalLM"}


def parse_command(line: str) -> tuple[list[str], dict[str, Any]]:
    """Parse a vllmdiag command line with the real CLI, without running it: the
    subcommand path and its parameters; a usage error raises."""
    argv = shlex.split(line)
    assert argv[0] == "vllmdiag", line
    cmd: Any = typer.main.get_command(app)
    ctx = cmd.make_context("vllmdiag", [USER.get(a, a) for a in argv[1:]])
    path = []
    while hasattr(cmd, "resolve_command"):
        args = [*getattr(ctx, "_protected_args", []), *ctx.args]
        name, cmd, rest = cmd.resolve_command(ctx, args)
        ctx = cmd.make_context(name, rest, parent=ctx)
        path.append(name)
    return path, dict(ctx.params)


def test_every_next_step_is_a_command_that_parses() -> None:
    cat = Catalogue.load(use_env=False)
    assert len(cat.entries) >= 25
    for entry in cat.entries:
        line = entry.next_step.format_map(VALUES)
        path, params = parse_command(line)
        assert path, (entry.name, line)
        if path == ["window"]:
            assert params["symbol"] and params["consumer"] == ["vllm==0.18.0"], line
        if path == ["leg", "show"]:
            assert params["leg"] == USER["LEG"], line


def test_the_parser_catches_a_broken_next_step(capsys: pytest.CaptureFixture[str]) -> None:
    # A usage error surfaces either as click's exception or as the CLI's own one-line
    # error (printed) followed by an exit: both mean the line does not parse.
    for line, word in (
        ("vllmdiag window transformers --consumer vllm==0.18.0", "symbol"),
        ("vllmdiag arms check LEG", "check"),
    ):
        with pytest.raises((Exception, SystemExit)) as failed:
            parse_command(line)
        said = str(failed.value) + capsys.readouterr().err
        assert word in said, (line, said)


def _cli(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env=env)


def test_non_utf8_catalogue_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("entries:\n  - name: caf\xe9\n".encode("latin-1"))
    log = str(LOGS / "segfault.log")
    for res in (
        _cli("triage", log, "--catalogue", str(bad)),
        _cli("triage", log, env={"VLLMDIAG_CATALOGUE": str(bad)}),
    ):
        assert res.exit_code == 1, res.output
        assert f"{bad}:2:14: the catalogue is not UTF-8 text (byte 0xe9" in res.output
        assert "Traceback" not in res.output and "UnicodeDecodeError" not in res.output


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("- name: x\n", "a catalogue is a mapping with a list under 'entries', not a list"),
        ("", "not an empty file"),
        ("just text\n", "not a str ('just text')"),
        ("entries:\n  name: x\n", "'entries' must be a list of entries, not a mapping"),
        ("other: 1\n", "'entries' must be a list of entries, not missing"),
        ("entries:\n  - just a string\n", "each entry is a mapping"),
    ],
)
def test_misshapen_catalogue_is_a_clear_error(tmp_path: Path, text: str, says: str) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError) as err:
        Catalogue.load(bad)
    assert says in str(err.value) and str(bad) in str(err.value)
    res = _cli("triage", str(LOGS / "segfault.log"), "--catalogue", str(bad))
    assert res.exit_code == 1 and says in res.output and "Traceback" not in res.output


def test_a_pattern_that_can_backtrack_without_end_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "redos.yaml"
    bad.write_text(
        "entries:\n  - name: ok\n    pattern: fine\n    meaning: m\n    next_step: n\n"
        "  - name: slow\n    pattern: '(a+)+$'\n    meaning: m\n    next_step: n\n"
    )
    with pytest.raises(ConfigError) as err:
        Catalogue.load(bad)
    assert f"{bad}:6:" in str(err.value) and "backtrack" in str(err.value)
    assert nested_repeat(r"(a+)+$") and nested_repeat(r"(?:\w*\s?)*x")
    assert nested_repeat(r"Free memory on device .* is less than") is None
    assert nested_repeat(r"(?:\d{1,3}\.)+\d+") is None


def test_a_slow_pattern_the_check_misses_runs_out_of_time(tmp_path: Path) -> None:
    cat_file = tmp_path / "slow.yaml"
    cat_file.write_text(
        "entries:\n"
        "  - name: exponential\n    pattern: '(x|x)*y'\n    meaning: m\n"
        "    next_step: vllmdiag arms list\n"
        "  - name: after-it\n    pattern: 'x{30}'\n    meaning: found\n"
        "    next_step: vllmdiag arms list\n"
    )
    log = tmp_path / "x.log"
    log.write_text(
        f'Traceback (most recent call last):\n  File "a.py", line 1\nValueError: {"x" * 60}\n'
    )
    cat = Catalogue.load(cat_file)
    t0 = time.monotonic()
    rc = triage_file(log, cat).root_cause
    assert time.monotonic() - t0 < 10
    assert rc is not None and rc.known == "after-it"
    assert "exponential" in cat.timed_out and f"{cat_file}:2:" in cat.timed_out["exponential"]
    res = _cli("triage", str(log), "--catalogue", str(cat_file))
    assert res.exit_code == 0
    assert "catalogue entry exponential" in res.output and "time budget" in res.output


def test_advice_and_named_groups_fill_in() -> None:
    rc = triage_file(LOGS / "gemma4_018_chained.log", Catalogue.load(use_env=False)).root_cause
    assert rc is not None and rc.known == "transformers-unknown-model-type"
    assert rc.next_step == (
        "vllmdiag window transformers --symbol transformers.models.gemma4 "
        "--consumer vllm==<version>"
    )
    assert rc.advice is not None and "gemma4" in rc.advice
    assert parse_command(rc.next_step.replace("<version>", "0.18.0"))[0] == ["window"]


def test_an_error_about_a_path_with_brackets_prints_the_path(tmp_path: Path) -> None:
    odd = tmp_path / "[bold]x"
    odd.mkdir()
    bad = odd / "c.yaml"
    bad.write_bytes(b"entries:\n  - name: caf\xe9\n")
    res = _cli("triage", str(LOGS / "segfault.log"), "--catalogue", str(bad))
    assert res.exit_code == 1
    assert f"{bad}:2:14: the catalogue is not UTF-8 text" in res.output
