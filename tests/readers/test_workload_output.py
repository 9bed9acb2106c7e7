"""Metrics a cell reports, read back without hanging or reading without end: a regex
that backtracks without end is refused at load, a metric file that is /dev/zero or a
FIFO is a missing metric with its reason, a huge log is read in blocks, and {out_dir}
is absolute even for a relative --out."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.recipes import write_recipe
from vllmdiag.cli.app import app
from vllmdiag.model.recipe import MetricSpec
from vllmdiag.readers.workload_output import extract


def recipe(tmp_path: Path, script: str, metrics: str) -> Path:
    body = (
        "baseline: {leg: here}\n"
        f'workloads:\n  w:\n    command: ["{{python}}", "-c", {json.dumps(script)}]\n'
        f"    metrics:\n{metrics}gpus: 0\n"
    )
    return write_recipe(tmp_path, body, name="m", file="m.yaml")


def test_a_backtracking_metric_regex_is_refused_at_load(tmp_path: Path) -> None:
    path = recipe(tmp_path, "print(1)", "      - {name: t, regex: '(a+)+$(x)'}\n")
    result = CliRunner().invoke(app, ["matrix", str(path), "--dry-run"])
    assert result.exit_code == 1, result.output
    assert f"{path}:10:9: workloads.w.metrics[0]: the regex could backtrack" in result.output
    assert "Traceback" not in result.output


def test_a_metric_file_that_is_a_device_or_a_fifo_is_missing_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = (
        "import os, sys; out = os.getcwd(); "
        "os.symlink('/dev/zero', os.path.join(out, 'z.json')); "
        "os.mkfifo(os.path.join(out, 'f.json')); print('tok 12.5')"
    )
    metrics = (
        "      - {name: zero, json: z.json, key: a}\n"
        "      - {name: fifo, json: f.json, key: a}\n"
        "      - {name: tok, regex: 'tok ([0-9.]+)'}\n"
    )
    path = recipe(tmp_path, script, metrics)
    run = tmp_path / "run"
    start = time.monotonic()
    # a relative --out: the cell runs in its out dir, so {out_dir} must be absolute
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["matrix", str(path), "--out", "run"])
    assert time.monotonic() - start < 60
    assert "Traceback" not in result.output
    data = json.loads((run / "cells" / "r1.baseline.w" / "result.json").read_text())
    assert "zero: z.json is not a regular file" in data["reason"]
    assert "fifo: f.json is not a regular file" in data["reason"]
    assert data["metrics"]["tok"] == 12.5


def test_the_last_match_of_a_big_log_is_found_block_by_block(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    with log.open("w") as fh:
        fh.write("tok 1.0\n")
        fh.write(("x" * 99 + "\n") * 100_000)  # 10 MB: several blocks
        fh.write("tok 2.5\n" + "y" * 10 + "\n")
    spec = MetricSpec(name="tok", regex=r"tok ([0-9.]+)")
    found, missing = extract([spec], tmp_path, log)
    assert found == {"tok": 2.5} and not missing
    big = tmp_path / "metrics.json"
    with big.open("wb") as fh:
        fh.truncate(65 * 1024 * 1024)
    spec = MetricSpec(name="j", json="metrics.json", key="a")
    found, missing = extract([spec], tmp_path, log)
    assert not found and "larger than 64 MiB" in missing[0].why
