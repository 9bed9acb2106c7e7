"""Canonical selection, a pure function over constructed results: exactly one run per
(leg, model, workload) counts, by the stated rule, and every other run is listed with
why. Every result type the study writes survives the codec's round trip."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.support.paths import REPO
from vllmdiag import codec
from vllmdiag.jobs.study.canonical import RULE, Selection, select
from vllmdiag.jobs.study.gitstate import SourceState
from vllmdiag.jobs.study.load import load_study
from vllmdiag.jobs.study.measured import (
    CellSettings,
    Choice,
    Expected,
    Measured,
    Standing,
    differences,
)
from vllmdiag.jobs.study.plan import Filters, Slot
from vllmdiag.jobs.study.studydir import Attempt, BatchCell, BatchInfo, StudyFile
from vllmdiag.model.outcome import Outcome

SLOT = Slot("0.26", "Llama-3.1-8B-Instruct", "mixed")
ARGV = (
    "vllm",
    "bench",
    "throughput",
    "--model",
    "meta-llama/Llama-3.1-8B-Instruct",
    "--output-json",
    "{out_dir}/throughput.json",
    "--tensor-parallel-size",
    "1",
)
ENV = {"VLLM_NO_USAGE_STATS": "1"}
WANT = Expected("0.26", "lock-a", (ARGV,), ENV)


def run(
    batch: str,
    finished: str,
    value: float | None = 22263.0,
    *,
    outcome: Outcome = Outcome.PASS,
    repeat: int = 1,
    slot: Slot = SLOT,
    settings: CellSettings | None = None,
    why: str = "",
    contaminated: tuple[str, ...] = (),
) -> Measured:
    return Measured(
        batch=batch,
        cell=f"r{repeat}.{slot.leg}.{slot.model}.{slot.workload}",
        slot=slot,
        repeat=repeat,
        outcome=outcome,
        settings=settings or CellSettings("0.26", "lock-a", ARGV, dict(ENV)),
        finished=finished,
        metrics={"throughput": value} if value is not None else {},
        why=why,
        contaminated=contaminated,
    )


def choose(*measured: Measured, repeats: int = 1, **kw: object) -> Choice:
    sel = select(measured, {SLOT: WANT}, repeats=repeats, **kw)  # type: ignore[arg-type]
    assert sel.rule == RULE
    found = sel.choice(SLOT)
    assert found is not None
    return found


def test_every_same_settings_run_is_pooled_never_superseded() -> None:
    c = choose(run("batch-1", "2026-09-21T10:00", 22000.0), run("batch-2", "2026-09-21T12:00"))
    assert c.canonical is not None and c.canonical.batch == "batch-2"  # the reference run
    assert [r.batch for r in c.pooled] == ["batch-1", "batch-2"]
    assert c.values == {"throughput": (22000.0 + 22263.0) / 2}
    assert c.repeats == {"throughput": (22000.0, 22263.0)}
    assert c.origins["throughput"] == (
        "batch-1/r1.0.26.Llama-3.1-8B-Instruct.mixed",
        "batch-2/r1.0.26.Llama-3.1-8B-Instruct.mixed",
    )
    assert c.excluded == ()


def test_an_interrupted_run_is_pooled_once_one_run_is_whole() -> None:
    whole = [run("b1", f"2026-09-21T10:0{i}", v, repeat=i) for i, v in ((1, 100.0), (2, 104.0))]
    part = run("b2", "2026-09-21T12:00", 130.0)
    c = choose(*whole, part, repeats=2)
    assert c.canonical is not None and c.canonical.batch == "b1"
    assert [r.batch for r in c.pooled] == ["b1", "b2"]
    assert c.values == {"throughput": 104.0} and c.excluded == ()
    alone = choose(part, repeats=2)  # no whole run: no value, and it says why
    assert alone.canonical is None and alone.excluded[0].status is Standing.INCOMPLETE


def test_a_later_failure_does_not_displace_a_run_that_passed() -> None:
    c = choose(
        run("batch-1", "2026-09-21T10:00"),
        run("batch-2", "2026-09-21T12:00", None, outcome=Outcome.FAIL, why="OOM"),
    )
    assert c.canonical is not None and c.canonical.batch == "batch-1"
    assert [(e.status, e.reason) for e in c.excluded] == [(Standing.FAILED, "failed: OOM")]


def test_a_resumed_run_measured_under_other_settings_never_counts() -> None:
    """The B200/H200 ablation voided a round for this: a result measured with other flags, another
    environment or another install is listed, with what differs, and not counted."""
    flags = CellSettings("0.26", "lock-a", (*ARGV, "--enforce-eager"), dict(ENV))
    env = CellSettings("0.26", "lock-a", ARGV, {**ENV, "VLLM_LOGGING_LEVEL": "DEBUG"})
    lock = CellSettings("0.26", "lock-b", ARGV, dict(ENV))
    c = choose(
        run("batch-1", "2026-09-21T10:00", settings=flags),
        run("batch-2", "2026-09-21T11:00", settings=env),
        run("batch-3", "2026-09-21T12:00", settings=lock),
        freezes={"lock-a": ("transformers==5.17.0",), "lock-b": ("transformers==5.14.1",)},
    )
    assert c.canonical is None and c.values == {}
    reasons = [e.reason for e in c.excluded]
    assert all(e.status is Standing.OTHER_SETTINGS for e in c.excluded)
    assert reasons[0] == "measured under other settings: command with extra [--enforce-eager]"
    assert reasons[1] == ("measured under other settings: environment VLLM_LOGGING_LEVEL=DEBUG set")
    assert reasons[2] == (
        "measured under other settings: leg 0.26 installed differently (lock lock-b: "
        "transformers 5.14.1 (now 5.17.0))"
    )
    assert c.missing == "no run counts; the latest: " + reasons[2]


def test_a_pin_added_since_makes_the_unpinned_run_another_leg() -> None:
    pinned = Expected("0.26+transformers==5.14.1", None, (ARGV,), ENV)
    failed = run("batch-1", "2026-09-21T10:00", None, outcome=Outcome.FAIL, why="boom")
    sel = select([failed], {SLOT: pinned}, repeats=1)
    c = sel.choices[0]
    assert c.canonical is None
    assert c.excluded[0].reason == (
        "measured under other settings: leg 0.26 instead of 0.26+transformers==5.14.1; "
        "it failed: boom"
    )


def test_contaminated_failed_incomplete_and_never_started_runs() -> None:
    dirty = run("b1", "2026-09-21T10:00", contaminated=("vllm-omni: plugin patches vLLM",))
    c = choose(dirty)
    assert c.excluded[0].status is Standing.CONTAMINATED
    assert c.excluded[0].reason == "from a contaminated leg: vllm-omni: plugin patches vLLM"

    c = choose(run("b1", "2026-09-21T10:00"), repeats=3)
    assert c.canonical is None and c.excluded[0].reason == "incomplete: 1 of 3 repeats"

    never = replace(
        run("b1", "2026-09-21T10:00", None, outcome=Outcome.ERROR, why="leg 0.26: uv failed"),
        settings=CellSettings("0.26", "", ()),
    )
    c = choose(never)
    assert c.excluded[0].status is Standing.FAILED
    assert c.missing == "gave no result (error): leg 0.26: uv failed"
    assert c.outcome == "error"

    timeout = run("b1", "2026-09-21T10:00", None, outcome=Outcome.TIMEOUT, why="killed")
    assert choose(timeout).outcome == "timeout"


def test_repeats_give_the_median_and_a_failing_repeat_voids_the_run() -> None:
    reps = [
        run("b1", f"2026-09-21T10:0{i}", v, repeat=i)
        for i, v in ((1, 6985.0), (2, 7030.0), (3, 6948.0))
    ]
    c = choose(*reps, repeats=3)
    assert c.values == {"throughput": 6985.0}
    assert c.repeats == {"throughput": (6985.0, 7030.0, 6948.0)}
    assert c.canonical is not None and len(c.canonical.cells) == 3
    bad = [*reps[:2], run("b1", "2026-09-21T10:09", None, repeat=3, outcome=Outcome.FAIL)]
    c = choose(*bad, repeats=3)
    assert c.canonical is None and c.excluded[0].reason == "failed (repeat 3)"


def test_skipped_slots_and_slots_the_study_no_longer_has() -> None:
    other = Slot("0.26", "GLM-5.2-NVFP4", "mixed")
    sel = select(
        [run("b1", "2026-09-21T10:00"), run("b1", "2026-09-21T10:01", slot=other)],
        {SLOT: WANT},
        repeats=1,
        skipped={SLOT: "NVFP4 is Blackwell-only"},
    )
    c = sel.choices[0]
    assert c.canonical is None and c.missing == "not run: NVFP4 is Blackwell-only"
    assert c.excluded[0].status is Standing.NOT_IN_STUDY
    assert [s.slot for s in sel.strays] == [other]
    assert sel.strays[0].excluded[0].reason.startswith("the study's recipe no longer has")


def test_ties_are_broken_by_batch_order() -> None:
    c = choose(
        run("b2", "2026-09-21T10:00", 2.0),
        run("b1", "2026-09-21T10:00", 1.0),
        batch_order=["b1", "b2"],
    )
    assert c.canonical is not None and c.canonical.batch == "b2"


def test_differences_name_exactly_what_differs() -> None:
    same = CellSettings("0.26", "lock-a", ARGV, dict(ENV))
    assert differences(same, WANT) == []
    assert differences(replace(same, env=None), WANT) == ["environment not recorded"]
    unset = replace(same, env={})
    assert differences(unset, WANT) == ["environment VLLM_NO_USAGE_STATS not set (now 1)"]
    any_lock = replace(WANT, lock_hash=None)
    assert differences(replace(same, lock_hash="whatever"), any_lock) == []
    tp = (*ARGV[:-1], "2")
    assert differences(replace(same, argv=tp), WANT) == ["command [2] instead of [1]"]


def test_result_types_round_trip_through_the_codec() -> None:
    sel = select(
        [run("b1", "2026-09-21T10:00"), run("b2", "2026-09-21T11:00", 1.0)],
        {SLOT: WANT},
        repeats=1,
    )
    assert codec.load(Selection, codec.dump(sel)) == sel
    m = run("b1", "2026-09-21T10:00", outcome=Outcome.FAIL, why="x")
    assert codec.load(Measured, codec.dump(m)) == m
    state = SourceState("/r", "/r", "abc", "main", (" M a.py",), "+x\n", False, None)
    info = BatchInfo(
        study="s",
        name="batch-1",
        created="2026-09-21T10:00",
        filters=Filters(models=("a",)),
        cells={"r1.0.26.a.w": BatchCell("0.26", "a", "w", 1, "0.26+x==1")},
        attempts=(Attempt("2026-09-21T10:00", "node", False, str(Path("/r/s.yaml")), "d", state),),
    )
    assert codec.load(BatchInfo, codec.dump(info)) == info
    study = load_study(REPO / "recipes" / "vllm-ablation-study.yaml")
    file = StudyFile(study, "abc", "2026-09-21T10:00")
    assert codec.load(StudyFile, codec.dump(file)) == file
