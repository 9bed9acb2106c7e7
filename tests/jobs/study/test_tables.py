"""The study's tables from the canonical selection: the B200 rows of the B200/H200
ablation this project grew out of come out in that ablation's own shape (thousands
separators, 26/18 and 18→26 ratio columns, — with a note), coverage per leg, and what
``REPORT.md`` and the TSVs say reads back through ``vllmdiag compare`` to the same
values."""

from __future__ import annotations

from pathlib import Path

from vllmdiag import codec
from vllmdiag.jobs.compare import load_table
from vllmdiag.jobs.study import render
from vllmdiag.jobs.study.canonical import select
from vllmdiag.jobs.study.measured import CellSettings, Measured
from vllmdiag.jobs.study.plan import Slot
from vllmdiag.jobs.study.recipe import StudyRecipe
from vllmdiag.jobs.study.settings import expected
from vllmdiag.jobs.study.tables import StudyTables, auto_decimals, build, short_names
from vllmdiag.model.outcome import Outcome

STUDY = StudyRecipe.model_validate(
    {
        "name": "b200",
        "question": "0.18 → 0.26 → 0.29",
        "legs": {v: {"requirements": [f"vllm=={v}.0"]} for v in ("0.18", "0.26", "0.29")},
        "models": {
            "Llama-3.1-8B-Instruct": {"model": "meta-llama/Llama-3.1-8B-Instruct", "tp": 1},
            "gemma-4-26B-A4B-it": {
                "model": "google/gemma-4-26B-A4B-it",
                "pins": {"0.26": ["transformers==5.14.1"]},
                "workloads": ["mixed"],
            },
            "GLM-5.2-NVFP4": {"model": "nvidia/GLM-5.2-NVFP4", "tp": 8, "workloads": ["mixed"]},
        },
        "workloads": {
            "mixed": {"builtin": "vllm-throughput", "metrics": ["throughput"]},
            "single-request": {
                "builtin": "vllm-latency",
                "batch_size": 1,
                "output_len": 128,
                "metrics": ["latency"],
            },
        },
        "metrics": {
            "throughput": {"json": "throughput.json", "key": "tokens_per_second", "unit": "tok/s"},
            "latency": {
                "json": "latency.json",
                "key": "avg_latency",
                "better": "lower",
                "unit": "ms/tok",
                "scale": 1000,
                "per_token": True,
            },
        },
    }
)

#: (leg, model, workload) → the recorded value (latency: seconds per 128-token request).
RECORDED: dict[tuple[str, str, str], float | str] = {
    ("0.18", "Llama-3.1-8B-Instruct", "mixed"): 21943.0,
    ("0.26", "Llama-3.1-8B-Instruct", "mixed"): 22263.0,
    ("0.29", "Llama-3.1-8B-Instruct", "mixed"): 22157.0,
    ("0.18", "Llama-3.1-8B-Instruct", "single-request"): 3.82 * 0.128,
    ("0.26", "Llama-3.1-8B-Instruct", "single-request"): 3.73 * 0.128,
    ("0.29", "Llama-3.1-8B-Instruct", "single-request"): 3.83 * 0.128,
    ("0.18", "gemma-4-26B-A4B-it", "mixed"): "ValidationError: model type gemma4 not recognized",
    ("0.26", "gemma-4-26B-A4B-it", "mixed"): 10528.0,
    ("0.29", "gemma-4-26B-A4B-it", "mixed"): 12171.0,
    ("0.18", "GLM-5.2-NVFP4", "mixed"): "ValidationError: model type glm_moe_dsa",
    ("0.26", "GLM-5.2-NVFP4", "mixed"): 4306.0,
}


def ablation_tables() -> StudyTables:
    want = expected(STUDY, {})
    measured = []
    for (leg, model, wl), value in RECORDED.items():
        slot = Slot(leg, model, wl)
        exp = want[slot]
        metric = STUDY.workload_metrics(wl)[0]
        passed = isinstance(value, float)
        measured.append(
            Measured(
                batch="batch-1",
                cell=f"r1.{leg}.{model}.{wl}",
                slot=slot,
                repeat=1,
                outcome=Outcome.PASS if passed else Outcome.FAIL,
                settings=CellSettings(exp.leg, "lock", exp.argvs[0], dict(exp.env)),
                finished="2026-09-21T10:00:00",
                metrics={metric: value} if isinstance(value, float) else {},
                why="" if isinstance(value, float) else str(value),
            )
        )
    return build(STUDY, select(measured, want, repeats=1))


def test_the_ablation_s_rows_come_out_in_its_shape() -> None:
    tables = ablation_tables()
    throughput, latency = tables.tables
    md = render.markdown(render.metric_grid(throughput, notes_text=False), code=(0,))
    spread_head = "± 0.18 | ± 0.26 | ± 0.29 | 26/18 call | 29/26 call"
    assert md[0] == (
        f"| model | tp | workload | 0.18 | 0.26 | 0.29 | 26/18 | 29/26 | {spread_head} | notes |"
    )
    # One timed pass per value (the B200/H200 ablation's runs): n=1, so no ratio is called
    # either way.
    single = "n=1 | n=1 | n=1 | not called | not called"
    assert md[2] == (
        "| `Llama-3.1-8B-Instruct` | 1 | mixed | 21,943 | 22,263 | 22,157 | 1.01x | 1.00x | "
        f"{single} |  |"
    )
    assert md[3] == (
        "| `gemma-4-26B-A4B-it` | 1 | mixed | — | 10,528 | 12,171 | — | 1.16x | "
        "— | n=1 | n=1 | — | not called | [1] |"
    )
    assert md[4] == (
        "| `GLM-5.2-NVFP4` | 8 | mixed | — | 4,306 | — | — | — | — | n=1 | — | — | — | [2], [3] |"
    )
    assert throughput.notes == (
        "0.18: failed: ValidationError: model type gemma4 not recognized",
        "0.18: failed: ValidationError: model type glm_moe_dsa",
        "0.29: not run",
    )
    assert throughput.title == "throughput (tok/s, higher is better)"
    lat = render.markdown(render.metric_grid(latency, notes_text=False), code=(0,))
    assert lat[0].startswith("| model | tp | workload | 0.18 | 0.26 | 0.29 | 18→26 | 26→29 |")
    assert lat[2].startswith(
        "| `Llama-3.1-8B-Instruct` | 1 | single-request | 3.82 | 3.73 | 3.83 | 1.02x | 0.97x |"
    )


def test_coverage_per_leg_names_failures_with_their_root_cause() -> None:
    cov = {r.leg: r for r in ablation_tables().coverage}
    assert cov["0.18"].passing == ("Llama-3.1-8B-Instruct",)
    assert [(a.model, a.why) for a in cov["0.18"].failing] == [
        ("gemma-4-26B-A4B-it", "failed: ValidationError: model type gemma4 not recognized"),
        ("GLM-5.2-NVFP4", "failed: ValidationError: model type glm_moe_dsa"),
    ]
    assert len(cov["0.26"].passing) == 3 and not cov["0.26"].failing
    assert [(a.model, a.why) for a in cov["0.29"].not_run] == [("GLM-5.2-NVFP4", "not run")]
    grid = render.coverage_grid(ablation_tables().coverage)
    assert grid[1][:2] == ["0.18", "1/3"] and grid[2][:3] == ["0.26", "3/3", "—"]


def test_report_and_tsv_read_back_through_compare_to_the_same_values(tmp_path: Path) -> None:
    tables = ablation_tables()
    report = tmp_path / "REPORT.md"
    report.write_text(render.report(tables, [], []))
    md = load_table(report, "latency")
    assert md.direction == "lower" and md.legs == ("0.18", "0.26", "0.29")
    llama = md.rows[0]
    assert [m.value.value for m in llama.measurements if m.value] == [3.82, 3.73, 3.83]
    assert [p.column for p in llama.printed] == ["18→26", "26→29"]
    tsv = tmp_path / "throughput.tsv"
    t = tables.tables[0]
    tsv.write_text(render.tsv(render.metric_grid(t, notes_text=True), t.title))
    read = load_table(tsv)
    assert read.direction == "higher"
    by_model = {r.model: r for r in read.rows}
    gemma = by_model["gemma-4-26B-A4B-it"]
    assert gemma.measurement("0.18") is not None
    assert gemma.measurement("0.18").value is None  # type: ignore[union-attr]
    assert gemma.measurement("0.29").value.value == 12171.0  # type: ignore[union-attr]
    assert ("notes", "0.18: failed: ValidationError: model type gemma4 not recognized") in (
        gemma.extras
    )
    report_text = report.read_text()
    assert "## Coverage" in report_text and "[1] 0.18: failed: ValidationError" in report_text
    assert "## Root causes of failing cells" in report_text


def test_canonical_md_states_the_rule_and_every_choice() -> None:
    text = render.canonical(ablation_tables())
    assert "## The rule" in text and "latest" in text
    assert "| `Llama-3.1-8B-Instruct` | mixed | 0.26 | batch-1 | `r1.0.26." in text
    assert "## Excluded runs (2)" in text


def test_short_leg_names_and_decimals() -> None:
    assert short_names(["0.18", "0.26", "0.29"]) == {"0.18": "18", "0.26": "26", "0.29": "29"}
    assert short_names(["v0.18.0", "v0.26.0"]) == {"v0.18.0": "18", "v0.26.0": "26"}
    assert short_names(["old", "new"]) == {"old": "old", "new": "new"}
    assert short_names(["0.18", "vllm-0.18"])["0.18"] == "0.18"
    assert auto_decimals([21943.0, 300.0]) == 0
    assert auto_decimals([3.82, 0.17]) == 2
    assert auto_decimals([0.0076]) == 4
    assert auto_decimals([]) == 0


def test_tables_round_trip_through_the_codec() -> None:
    tables = ablation_tables()
    assert codec.load(StudyTables, codec.dump(tables)) == tables
