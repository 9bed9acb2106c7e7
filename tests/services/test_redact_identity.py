"""Shareable files name no host however short its name, and no Windows user."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag.cli.app import app
from vllmdiag.services import redact


def test_short_and_dotted_host_names_and_windows_homes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redact, "_who", lambda: ("alice", "vm"))
    assert redact.identity("ran on vm: llvm vm-2 (vm)") == "ran on <host>: llvm vm-2 (<host>)"
    assert redact.identity(r"C:\Users\bob\x.py and c:\\Users\\carol\\y") == (
        r"C:\Users\<user>\x.py and c:\\Users\\<user>\\y"
    )
    assert (
        redact.identity("C:/Users/dave/z C:/Users/Public/p")
        == "C:/Users/<user>/z C:/Users/Public/p"
    )
    monkeypatch.setattr(redact, "_who", lambda: ("alice", "gpu17.example.com"))
    assert redact.identity("gpu17 gpu17.example.com") == "<host> <host>"


def test_summary_md_masks_a_two_letter_host_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redact, "_who", lambda: ("alice", "vm"))
    path = tmp_path / "recipe.yaml"
    (tmp_path / "fail.py").write_text(r"raise OSError(r'cannot reach vm from C:\Users\bob\cfg')")
    path.write_text(
        textwrap.dedent(
            f"""\
            name: host
            question: which host?
            legs:
              here: {{path: {sys.executable}}}
            baseline: {{leg: here}}
            workloads:
              w: {{command: "{{python}} {{recipe_dir}}/fail.py"}}
            """
        )
    )
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["matrix", str(path), "--out", str(run)])
    assert result.exit_code == 0, result.output
    summary = (run / "summary.md").read_text()
    assert "cannot reach <host> from" in summary, summary
    assert "bob" not in summary and " vm " not in summary
