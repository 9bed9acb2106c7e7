"""Triage on real failure logs from public issue threads, as users pasted them (see
``fixtures/logs/field/truth.yaml``): every log's root cause, read by hand, is asserted."""

from __future__ import annotations

import re
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.support.paths import FIXTURES, REPO
from vllmdiag.readers.triage import Catalogue, triage_file

FIELD = FIXTURES / "logs" / "field"
README = REPO / "README.md"
TRUTH: list[dict[str, Any]] = YAML(typ="safe").load((FIELD / "truth.yaml").read_text())["logs"]
EVIDENCE = {"traceback", "exception-line", "death-line", "wrapper-message"}


def _check(entry: dict[str, Any]) -> list[str]:
    """What triage got wrong on one log, as readable lines (empty: right)."""
    t = triage_file(FIELD / entry["file"], Catalogue.load(use_env=False))
    rc = t.root_cause
    if entry.get("unknowable"):
        if rc is not None:
            return [f"guessed {rc.type}: {rc.message[:100]} where nothing can be known"]
        return [] if t.note and t.note.startswith("unknown:") else [f"note: {t.note!r}"]
    if rc is None:
        return [f"no root cause: {t.note}"]
    wrong = []
    for key in ("type", "process", "evidence", "origin", "package", "known"):
        if key in entry and getattr(rc, key) != entry[key]:
            wrong.append(f"{key}: {getattr(rc, key)!r} != {entry[key]!r}")
    if not rc.message.startswith(entry["message"]):
        wrong.append(f"message: {rc.message[:120]!r}")
    wrong += [f"message lacks {c!r}" for c in entry.get("contains", []) if c not in rc.message]
    return wrong


def test_truth_file_is_whole() -> None:
    files = {p.name for p in FIELD.glob("*.log")}
    assert {e["file"] for e in TRUTH} == files
    assert len(TRUTH) >= 40
    for e in TRUTH:
        assert e["source"].startswith("https://github.com/"), e
        if not e.get("unknowable"):
            assert e["evidence"] in EVIDENCE, e
            assert {"type", "message", "process"} <= set(e), e


@pytest.mark.parametrize("entry", TRUTH, ids=[e["file"] for e in TRUTH])
def test_field_log_root_cause(entry: dict[str, Any]) -> None:
    wrong = _check(entry)
    if entry.get("expected_miss"):
        pytest.xfail(entry["expected_miss"])
    assert not wrong, "\n".join(wrong)


def test_readme_states_the_score_triage_gets() -> None:
    misses = [e["file"] for e in TRUTH if e.get("expected_miss") or _check(e)]
    right = len(TRUTH) - len(misses)
    m = re.search(r"names the root cause of (\d+) of (\d+) real logs", README.read_text())
    assert m is not None, "README's triage paragraph states the field score"
    assert (int(m[1]), int(m[2])) == (right, len(TRUTH)), misses
