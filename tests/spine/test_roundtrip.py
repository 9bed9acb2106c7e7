"""The spine's contracts: every typed result survives the one encoder both ways, the
journal and the live view see the same events, and a run journaled by the previous
schema still resumes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from tests.support.recipes import write_recipe
from vllmdiag import codec
from vllmdiag.cli.app import app
from vllmdiag.jobs.matrix import MatrixOptions, MatrixReport, run_matrix
from vllmdiag.jobs.matrix import plan_matrix as plan
from vllmdiag.model.outcome import CellResult
from vllmdiag.services.config import load_recipe
from vllmdiag.spine.rundir import load_result, record_name
from vllmdiag.spine.runner.events import CellFinished, CellTick


def _recipe(tmp_path: Path) -> Path:
    body = """\
    baseline: {leg: here, env: {A: "1"}}
    arms:
      - {name: eager, flag: --enforce-eager}
    workloads:
      ok: {command: "{python} -c print(1) {flags}"}
      bad: {command: "{python} -c 'raise SystemExit(3)' {flags}"}
    """
    return write_recipe(
        tmp_path, body, name="rt", question="does everything survive the codec?", file="r.yaml"
    )


def test_every_result_of_a_real_run_round_trips(tmp_path: Path) -> None:
    events: list[object] = []
    report = run_matrix(
        load_recipe(_recipe(tmp_path)), MatrixOptions(out=tmp_path / "run"), events.append
    )
    assert codec.load(MatrixReport, codec.dump(report)) == report
    for cell in report.cells:
        assert codec.load(CellResult, codec.dump(cell)) == cell
        on_disk = json.loads((tmp_path / "run/cells" / cell.id / "result.json").read_text())
        assert on_disk["schema"] == 2
        assert load_result(on_disk).id == cell.id
    p = plan(load_recipe(_recipe(tmp_path)))
    assert codec.load(type(p), codec.dump(p)) == p
    for event in events:
        assert codec.load(type(event), codec.dump(event)) == event


def test_the_journal_is_the_events_the_observer_saw(tmp_path: Path) -> None:
    seen: list[Any] = []
    run_matrix(load_recipe(_recipe(tmp_path)), MatrixOptions(out=tmp_path / "run"), seen.append)
    journal = [json.loads(x) for x in (tmp_path / "run/run.jsonl").read_text().splitlines()]
    shown = [record_name(type(e)) for e in seen if not isinstance(e, CellTick)]
    assert [r["event"] for r in journal] == shown
    finished = [e for e in seen if isinstance(e, CellFinished)]
    written = [r for r in journal if r["event"] == "cell_finished"]
    assert [codec.load(CellResult, r["result"]) for r in written] == [e.result for e in finished]


@pytest.mark.network
def test_a_run_journaled_by_the_previous_schema_resumes(tmp_path: Path) -> None:
    """The fixture is a real run of the previous vllmdiag, stopped with SIGTERM in its
    second cell: its finished cell is reused, the other runs."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "schema1-run" / "run", run)
    recipe = tmp_path / "recipe.yaml"
    shutil.copy(FIXTURES / "schema1-run" / "recipe.yaml", recipe)
    (run / "cells/r1.baseline.slow/out").mkdir(parents=True)
    (run / "cells/r1.baseline.slow/out/go").write_text("")
    old = load_result(json.loads((run / "cells/r1.baseline.quick/result.json").read_text()))
    assert old.reuse_key == "5fc5683758bbc26778fe" and old.fingerprint is not None
    result = CliRunner().invoke(app, ["matrix", str(recipe), "--resume", str(run), "--json"])
    assert result.exit_code == 0, result.output
    cells = {c["id"]: c for c in json.loads(result.stdout)["cells"]}
    assert cells["r1.baseline.quick"]["reuse_key"] == old.reuse_key
    assert cells["r1.baseline.slow"]["outcome"] == "pass"
    journal = [json.loads(x) for x in (run / "run.jsonl").read_text().splitlines()]
    assert {r["schema"] for r in journal} == {1, 2}
    reused = [r for r in journal if r["event"] == "cell_reused"]
    assert [r["id"] for r in reused] == ["r1.baseline.quick"]
