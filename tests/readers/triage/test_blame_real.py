"""Whose fault, on real logs from public threads (``fixtures/logs/blame``), read by hand
before the tool was run on them; and the field logs' hand reading of blame, counted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from tests.support import field_score as fs
from tests.support.paths import FIXTURES
from vllmdiag import codec
from vllmdiag.cli.app import app
from vllmdiag.readers.triage import Catalogue, Origin, RootCause, triage_file
from vllmdiag.spine.runner.readers import RunReaders

HERE = FIXTURES / "logs"
BLAME = YAML(typ="safe").load((HERE / "blame" / "truth.yaml").read_text())["logs"]
FIXTURES_KV = FIXTURES / "vllm026" / "kv-starved"
FIELD = YAML(typ="safe").load((HERE / "field" / "truth.yaml").read_text())["logs"]


def _blame(folder: str, entry: dict[str, Any]) -> tuple[str, str | None, str] | None:
    rc = triage_file(HERE / folder / entry["file"], Catalogue.load(use_env=False)).root_cause
    return None if rc is None else (rc.origin, rc.package, rc.why)


@pytest.mark.parametrize("entry", BLAME, ids=[e["file"] for e in BLAME])
def test_whose_fault_on_a_real_log(entry: dict[str, Any]) -> None:
    got = _blame("blame", entry)
    if entry.get("expected_miss"):
        pytest.xfail(entry["expected_miss"])
    assert got is not None, entry["file"]
    origin, package, why = got
    assert origin == entry["origin"], (entry["file"], got)
    if entry.get("package"):
        assert package == entry["package"], (entry["file"], got)
    assert why, "every blame says why"


def test_every_log_has_a_source_and_a_hand_reading() -> None:
    files = {p.name for p in (HERE / "blame").glob("*.log")}
    assert files == {e["file"] for e in BLAME}
    for e in BLAME:
        assert e["source"].startswith("https://github.com/") and e["read"] and e["origin"]


def test_the_hand_reading_of_blame_agrees_on_nine_in_ten() -> None:
    """Over the field logs whose blame was read by hand and the blame logs, the tool and
    the hand reading agree at least 90 % of the time (the README states the figures)."""
    read = [("field", e) for e in FIELD if e.get("origin")] + [("blame", e) for e in BLAME]
    agree = sum(1 for folder, e in read if (_blame(folder, e) or ("",))[0] == e["origin"])
    assert len(read) >= 40
    assert agree / len(read) >= 0.9, f"{agree}/{len(read)}"


def test_blame_round_trips_through_the_codec_and_an_older_record_still_loads() -> None:
    rc = triage_file(HERE / "blame" / "openrlhf_702_worker_use_ray_actor.log").root_cause
    assert rc is not None and (rc.origin, rc.package, rc.raised_in) == (
        "caller",
        "openrlhf",
        "vllm",
    )
    assert codec.load(RootCause, codec.dump(rc)) == rc
    summary = RunReaders().root_cause(HERE / "blame" / "openrlhf_702_worker_use_ray_actor.log")
    assert summary == rc  # the one type: a cell's result keeps what triage read
    assert codec.load(RootCause, codec.dump(summary)) == summary
    assert (summary.origin, summary.package, summary.why) == ("caller", "openrlhf", rc.why)
    old = {"type": "E", "message": "m", "origin": "user", "package": None}  # before blame
    loaded = codec.load(RootCause, old)
    assert loaded.origin is Origin.USER and loaded.why is None and loaded.raised_in is None


def test_triage_prints_whose_fault_and_why_in_text_and_json() -> None:
    log = str(HERE / "blame" / "openrlhf_702_worker_use_ray_actor.log")
    text = CliRunner().invoke(app, ["triage", log])
    assert text.exit_code == 0, text.output
    assert "origin     caller (openrlhf): openrlhf called vLLM with arguments" in text.stdout
    assert "raised in  vllm" in text.stdout
    data = json.loads(CliRunner().invoke(app, ["triage", log, "--json"]).stdout)["root_cause"]
    assert (data["origin"], data["package"], data["raised_in"]) == ("caller", "openrlhf", "vllm")
    assert data["why"].startswith("openrlhf called vLLM")
    table = CliRunner().invoke(app, ["triage", str(FIXTURES_KV)])
    assert table.exit_code == 0 and "known, whose" in table.stdout and "config" in table.stdout


def test_the_scorer_reads_a_corpus_read_for_blame_only_and_the_threads_blame() -> None:
    score = fs.score(HERE / "blame", fs.library_triage)
    assert (score.total, score.blame_only) == (0, len(BLAME))
    assert (score.blame_agree, score.blamed) == (len(BLAME), len(BLAME)), score.lines()
    assert fs.thread_blame({"thread_blame": "caller:ray"}) == ("caller", "ray")
    assert fs.thread_blame({"thread_blame": "caller (ray)"}) == ("caller", "ray")
    assert fs.thread_blame({"thread_blame": "environment"}) == ("environment", None)
    assert fs.thread_blame({"thread_blame": {"blame": "caller", "blame_package": "trl"}}) == (
        "caller",
        "trl",
    )
    assert fs.thread_blame({"thread_blame": "caller", "thread_blame_package": "verl"}) == (
        "caller",
        "verl",
    )
    got = {"root_cause": {"origin": "caller", "package": "Ray", "why": "w"}}
    assert fs.thread_blame_wrong({"thread_blame": "caller:ray"}, got, True) is None
    assert fs.thread_blame_wrong({"thread_blame": "config"}, got, True) == (
        "blame 'caller' != 'config'"
    )


def test_a_package_agrees_however_the_project_is_spelt() -> None:
    assert fs._differs(("caller", "lm_eval"), "caller", "lm-evaluation-harness") is None
    assert fs._differs(("caller", "llamafactory"), "caller", "LLaMA-Factory") is None
    assert fs._differs(("dependency", "cutlass"), "dependency", "nvidia-cutlass-dsl") is None
    assert fs._differs(("caller", "verl"), "caller", "trl") == "blame package 'verl' != 'trl'"
