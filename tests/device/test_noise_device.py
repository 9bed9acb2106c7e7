"""Noise measured from the run itself, on a real vLLM engine: a metric matrix with
repeats and an A/A control, and a two-release study measured in two batches under
identical settings (the shape of issue 18's H200 case). The checks are the invariants
the CPU suite cannot fake: a real run's noise estimate is named with its source, an A/A
pair is never called a difference, same-settings batches are pooled, and both the
verdict and the tables regenerate from the run directories alone.

The second leg (vLLM 0.25.0 beside the image's 0.26.0, see
``../shared/device/README.md``) is ``VLLMDIAG_VLLM_PYTHON_OLD``; the study is skipped
without it.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag.cli.app import app

QUIET = '{VLLM_NO_USAGE_STATS: "1", DO_NOT_TRACK: "1", VLLM_USE_FLASHINFER_SAMPLER: "0"}'


def _keep(src: Path, keep: Path | None, name: str) -> None:
    if keep is not None and src.exists():
        shutil.copytree(src, keep / name, dirs_exist_ok=True)


def test_metric_matrix_with_repeats_names_its_noise_and_regenerates(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    recipe = tmp_path / "noise-matrix.yaml"
    recipe.write_text(
        textwrap.dedent(
            f"""\
            name: noise-matrix
            question: Which differences can three timed passes separate from noise?
            legs:
              v026:
                path: {vllm_python}
            baseline:
              leg: v026
              env: {QUIET}
              flags: [--max-model-len 2048]
            workloads:
              llama:
                builtin: vllm-throughput
                model: {tiny_models / "llama"}
                input_len: 128
                output_len: 256
                num_prompts: 400
            arms: [enforce-eager]
            controls: [v026]
            metrics:
              - {{name: tokens_per_second, json: throughput.json, key: tokens_per_second}}
            timeout: 600
            """
        )
    )
    run_dir = tmp_path / "run"
    try:
        result = CliRunner().invoke(app, ["matrix", str(recipe), "--out", str(run_dir), "--json"])
    finally:
        _keep(run_dir, keep, "noise-matrix")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert len(report["cells"]) == 9  # 3 repeats by default, repetition the outer loop
    assert {c["outcome"] for c in report["cells"]} == {"pass"}, report["cells"]
    verdict = report["verdict"]
    noise = verdict["noise"]["llama"]
    assert noise["value"] is not None and noise["n"] == 9, noise
    assert noise["source"].startswith(("repeats of", "A/A pair"))
    arms = {a["name"]: a for a in verdict["arms"]}
    # The control runs the baseline's cells: an A/A pair, never a difference.
    aa = arms["v026"]
    assert "A/A pair" in aa["detail"] and aa["workloads"]["llama"]["difference_detected"] is False
    assert "## Noise (measured from this run)" in (run_dir / "summary.md").read_text()
    recorded = (run_dir / "verdict.json").read_bytes()
    again = CliRunner().invoke(app, ["matrix", "verdict", str(run_dir)])
    assert again.exit_code == 0, again.output
    assert (run_dir / "verdict.json").read_bytes() == recorded
    _keep(run_dir, keep, "noise-matrix")


@pytest.mark.skipif(
    not os.environ.get("VLLMDIAG_VLLM_PYTHON_OLD"),
    reason="set VLLMDIAG_VLLM_PYTHON_OLD to a second release's python (e.g. /tmp/v025/bin/python)",
)
def test_two_release_study_pools_two_same_settings_batches(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    old = Path(os.environ["VLLMDIAG_VLLM_PYTHON_OLD"])
    recipe = tmp_path / "two-release.yaml"
    recipe.write_text(
        textwrap.dedent(
            f"""\
            name: two-release
            question: vLLM 0.25 or 0.26 on the small Llama?
            legs:
              "0.25": {{path: {old}}}
              "0.26": {{path: {vllm_python}}}
            harness:
              env: {QUIET}
              flags: [--max-model-len 2048]
            models:
              llama: {{model: {tiny_models / "llama"}, tp: 1}}
            workloads:
              mixed:
                builtin: vllm-throughput
                input_len: 128
                output_len: 256
                num_prompts: 400
                metrics: [throughput]
            metrics:
              throughput: {{json: throughput.json, key: tokens_per_second, unit: tok/s}}
            repeats: 1
            timeout: 600
            """
        )
    )
    out = tmp_path / "study"
    try:
        for batch in ("llama-first", "llama-again"):
            result = CliRunner().invoke(
                app, ["study", str(recipe), "--out", str(out), "--batch", batch]
            )
            assert result.exit_code == 0, result.output
    finally:
        _keep(out, keep, "two-release-study")
    canonical = (out / "CANONICAL.md").read_text()
    assert "superseded" not in canonical and "## Excluded runs (0)" in canonical
    for leg in ("0.25", "0.26"):
        assert f"| `llama` | mixed | {leg} | llama-first, llama-again |" in canonical
    tsv = (out / "tables/throughput.tsv").read_text().splitlines()
    row = dict(zip(tsv[1].split("\t"), tsv[2].split("\t"), strict=False))
    assert row["± 0.25"].split(" ")[1] == "n=2" and row["± 0.26"].split(" ")[1] == "n=2"
    assert row["26/25 call"] in ("difference", "no difference detected")
    names = ("REPORT.md", "CANONICAL.md", "tables/throughput.tsv")
    before = {n: (out / n).read_bytes() for n in names}
    again = CliRunner().invoke(app, ["study", "tables", str(out)])
    assert again.exit_code == 0, again.output
    assert {n: (out / n).read_bytes() for n in names} == before
