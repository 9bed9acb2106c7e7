"""Triage on the held-out corpus (``fixtures/logs/field2/truth.yaml``): real failure logs
from threads of projects that run vLLM, none used to build the readers, each read by hand
(root cause, and whose fault it is) before triage ran on it. Every entry is asserted; an
``expected_miss`` entry counts as a miss, and the totals are asserted too."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support import field_score as fs
from tests.support.paths import FIXTURES, REPO

FIELD = FIXTURES / "logs" / "field"
README = REPO / "README.md"
TRUTH = fs.load_truth(fs.FIELD2)
MIN_ROOT_CAUSE = 0.95


def test_truth_file_is_whole_and_held_out() -> None:
    files = {p.name for p in fs.FIELD2.glob("*.log")}
    assert {e["file"] for e in TRUTH} == files
    assert len(TRUTH) >= 60
    sources = [e["source"] for e in TRUTH]
    assert len(set(sources)) == len(sources), "one log per thread"
    used = {e["source"] for e in fs.load_truth(FIELD)}
    assert not used & set(sources), "no thread of the corpus the readers were built on"
    for e in TRUTH:
        assert e["source"].startswith("https://github.com/"), e
        assert e["blame"] in fs.BLAMES, e
        assert e.get("why"), e
        if not e.get("unknowable"):
            assert e["evidence"] in fs.EVIDENCE, e
            assert {"type", "message", "process"} <= set(e), e
        else:
            assert e["blame"] == "unknown", e


@pytest.mark.parametrize("entry", TRUTH, ids=[e["file"] for e in TRUTH])
def test_field2_log_root_cause(entry: dict[str, Any]) -> None:
    wrong = fs.root_cause_wrong(entry, fs.library_triage(fs.FIELD2 / entry["file"]))
    if entry.get("expected_miss"):
        pytest.xfail(entry["expected_miss"])
    assert not wrong, "\n".join(wrong)


def _on_field2() -> str:
    """The README from where it speaks of this corpus's held-out scoring."""
    text = README.read_text()
    return text[text.index("on `field2/` triage") :]


def test_root_cause_is_right_for_95_percent_and_the_readme_says_so() -> None:
    score = fs.score(fs.FIELD2, fs.library_triage)
    assert score.right >= MIN_ROOT_CAUSE * score.total, score.lines()
    misses = {f for f, _ in score.misses}
    assert misses == {e["file"] for e in TRUTH if e.get("expected_miss")}, score.lines()
    m = re.search(r"root cause of\s+(\d+)\s+of\s+(\d+)\s+held-out\s+logs", _on_field2())
    assert m is not None, "README's triage paragraph states the held-out score"
    assert (int(m[1]), int(m[2])) == (score.right, score.total), score.lines()


def test_the_scoring_helper_reads_the_clis_own_json() -> None:
    entry = next(e for e in TRUTH if e["file"].startswith("dynamo_1471"))
    via_cli = fs.cli_triage(fs.FIELD2 / entry["file"])
    assert via_cli["root_cause"] == fs.library_triage(fs.FIELD2 / entry["file"])["root_cause"]
    assert fs.root_cause_wrong(entry, via_cli) == []


#: Whose fault it is, against the hand reading under docs/blame.md, as measured now (the
#: corpus is no longer held out for blame: the rules were studied on its misses). A
#: change that loses one fails here; one that wins one updates this.
BLAME_NOW = (85, 85)


def test_blame_agrees_with_the_hand_reading_as_measured() -> None:
    """Whose fault it is, against the hand reading: the figure measured now, at least the
    issue's 90 %, and no lower than the held-out figure the README states (scored before
    the blame rules were studied on this corpus; the misses are listed by
    ``field_score.py``)."""
    score = fs.score(fs.FIELD2, fs.library_triage)
    assert (score.blame_agree, score.blamed) == BLAME_NOW, score.lines()
    assert score.blame_agree >= 0.9 * score.blamed
    m = re.search(r"agrees with the hand reading for\s+(\d+) of (\d+)\s+held-out", _on_field2())
    assert m is not None, "README states the held-out blame agreement"
    assert int(m[2]) == score.blamed and int(m[1]) <= score.blame_agree, score.lines()


def test_the_thread_blame_is_recorded_only_where_the_paste_shows_another_party() -> None:
    """An entry's ``thread_blame`` is the thread's reading where it differs from what the
    paste shows; the scorer counts agreement with it apart."""
    withs = [e for e in TRUTH if "thread_blame" in e]
    assert withs, "the corpus records the thread's reading where it differs"
    for e in withs:
        kind, pkg = fs.thread_blame(e) or ("", None)
        assert kind in fs.BLAMES, e
        assert (kind, pkg) != (e["blame"], e.get("blame_package")), e
    score = fs.score(fs.FIELD2, fs.library_triage)
    assert score.thread_blamed == len(withs)
    assert "thread blame agrees for" in "\n".join(score.lines())
