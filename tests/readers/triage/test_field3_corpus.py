"""Triage on a second held-out corpus (``fixtures/logs/field3/``): real failure logs from
threads of vLLM and of projects that run it, collected and read by hand (root cause, and
whose fault it is) while the blame rules were written, and looked at only once those
rules were final. Its truth file is kept as the collector wrote it; the figures measured
on it are the README's, and the tests hold triage to them: a change that loses one fails
here, and one that wins one must say so in the README."""

from __future__ import annotations

import re

from tests.support import field_score as fs
from tests.support.paths import FIXTURES, REPO

FIELD3 = FIXTURES / "logs" / "field3"
README = REPO / "README.md"
TRUTH = fs.load_truth(FIELD3)


def test_the_corpus_is_whole_and_from_threads_no_other_corpus_used() -> None:
    assert {e["file"] for e in TRUTH} == {p.name for p in FIELD3.glob("*.log")}
    sources = [e["source"] for e in TRUTH]
    assert len(set(sources)) == len(sources) >= 35, "one log per thread"
    used = {e["source"] for e in fs.load_truth(fs.FIELD2)} | {
        e["source"] for e in fs.load_truth(FIELD3.parent / "field")
    }
    assert not used & set(sources)
    for e in TRUTH:
        assert e["source"].startswith("https://github.com/"), e
        assert e["blame"] in fs.BLAMES and e.get("why"), e
        if e.get("unknowable"):
            assert e["blame"] == "unknown", e
        else:
            assert e["evidence"] in fs.EVIDENCE and {"type", "message", "process"} <= set(e), e


def _readme_figures() -> tuple[tuple[int, int], tuple[int, int]]:
    text = " ".join(README.read_text().split())
    m = re.search(
        r"second held-out corpus\b.*?names the root cause of (\d+) of (\d+) and whose fault "
        r"it is agrees for (\d+) of (\d+)",
        text,
    )
    assert m is not None, "README states the second held-out corpus's figures"
    return (int(m[1]), int(m[2])), (int(m[3]), int(m[4]))


#: The figures of the one held-out scoring, before any reader was built on this corpus.
HELD_OUT = ((24, 35), (16, 35))


def _readme_after() -> tuple[tuple[int, int], tuple[int, int]]:
    text = " ".join(README.read_text().split())
    m = re.search(
        r"after readers built on it: (\d+) of (\d+) root causes and blame (\d+) of (\d+)", text
    )
    assert m is not None, "README states field3's figures after the readers built on it"
    return (int(m[1]), int(m[2])), (int(m[3]), int(m[4]))


def test_the_readme_keeps_the_held_out_figures_as_scored_once() -> None:
    assert _readme_figures() == HELD_OUT
    text = " ".join(README.read_text().split())
    assert "scored once before any change" in text


#: The figures as measured now, after the readers and the blame rules of docs/blame.md
#: (no longer held-out figures). A change that loses one fails here; one that wins one
#: updates this.
NOW = ((35, 35), (35, 35))


def test_the_figures_after_the_readers_are_as_measured_and_no_lower_than_the_readmes() -> None:
    score = fs.score(FIELD3, fs.library_triage)
    assert ((score.right, score.total), (score.blame_agree, score.blamed)) == NOW, score.lines()
    root, blame = _readme_after()
    assert root[1] == score.total and root[0] <= score.right, score.lines()
    assert blame[1] == score.blamed and blame[0] <= score.blame_agree, score.lines()
    assert root[0] >= HELD_OUT[0][0] and blame[0] >= HELD_OUT[1][0]


def test_the_scorer_reads_the_clis_own_json_on_this_corpus() -> None:
    entry = TRUTH[0]
    via_cli = fs.cli_triage(FIELD3 / entry["file"])
    assert via_cli["root_cause"] == fs.library_triage(FIELD3 / entry["file"])["root_cause"]
