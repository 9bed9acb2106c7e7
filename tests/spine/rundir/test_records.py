"""The run package owns the run directory: every record it writes reads back as the same
typed value, whole (a field added to a record type reaches ``result.json``, the journal
or the manifest and comes back with no change to the run package), schema-1 runs read
through the one chain of migrations, and no other module names a run directory's files."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import vllmdiag
from tests.support.paths import FIXTURES
from tests.support.recipes import write_recipe
from vllmdiag import codec
from vllmdiag.jobs.matrix import MatrixOptions, MatrixReport, run_matrix
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.stack import EnvRecord
from vllmdiag.model.verdict import Verdict
from vllmdiag.services.config import load_recipe
from vllmdiag.spine.rundir import (
    JournalSink,
    Manifest,
    NodeManifest,
    RunDir,
    layout,
    load_result,
    read_run,
    recorded_outcome,
    require_manifest,
)
from vllmdiag.spine.runner.events import CellFinished, RunStarted

PACKAGE = Path(vllmdiag.__file__).parent
RUN_PACKAGE = PACKAGE / "spine" / "rundir"


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
        tmp_path, body, name="rd", question="does every record of a run read back?", file="r.yaml"
    )


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, MatrixReport]:
    tmp = tmp_path_factory.mktemp("rundir")
    out = tmp / "run"
    report = run_matrix(load_recipe(_recipe(tmp)), MatrixOptions(out=out))
    return out, report


def _names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_every_record_of_a_real_run_reads_back_whole(real_run: tuple[Path, MatrixReport]) -> None:
    out, report = real_run
    record = read_run(out)
    assert record.warnings == ()
    assert set(record.results()) == {c.id for c in report.cells}
    for cell in report.cells:
        back = record.cells[cell.id].result
        assert back is not None
        assert dataclasses.replace(back, log="") == dataclasses.replace(cell, log="")
        assert Path(back.log).resolve() == Path(cell.log).resolve()
        on_disk = json.loads(layout.result_file(out, cell.id).read_text())
        assert set(on_disk) == _names(CellResult) | {"schema"}  # every field, by the codec
        journal = record.cells[cell.id].journal
        assert journal.recorded == (cell.outcome.value, cell.reuse_key)
        assert journal.env_by_key[cell.reuse_key] == {"A": "1"}
        assert cell.reuse_key in journal.finished_at
    for key, env in report.envs.items():
        assert record.envs[key] == env
        on_disk = json.loads(layout.env_file(out, key).read_text())
        assert set(on_disk) == _names(EnvRecord)
    assert record.verdict == report.verdict
    assert set(json.loads((out / layout.VERDICT).read_text())) == _names(Verdict)
    assert record.manifest is not None and record.recipe is not None
    assert record.recipe.name == "rd" and record.manifest.executor == "local"
    assert record.manifest.envs == report.envs
    assert [s.recipe for s in record.starts] == ["rd"]
    assert record.end is not None and record.end.status == "complete"
    assert record.starts[0].run_dir == str(out)


def test_each_record_type_round_trips_through_writer_and_reader(
    real_run: tuple[Path, MatrixReport], tmp_path: Path
) -> None:
    """Written by :class:`RunDir`, read by :func:`read_run`: the same typed values."""
    _, report = real_run
    run = RunDir.create("rt", out=tmp_path / "again", runs_root=tmp_path)
    sink = JournalSink(run)
    cell = dataclasses.replace(
        report.cells[0], log=str(run.log_path(report.cells[0].id)), node="n1", notes=("a",)
    )
    sink(RunStarted("rd", "src.yaml", run.path, 1, False, "h", "local", "id1", {"job": "x"}))
    run.write_result(cell)
    sink(CellFinished(1, 1, cell.id, cell))
    env = next(iter(report.envs.values()))
    nodes = {"n1": NodeManifest("id-1", ("0", "1"), {env.key: env}, {"k": "why"})}
    manifest = Manifest(recipe={}, envs={env.key: env}, executor="ray", nodes=nodes)
    run.write_manifest(manifest)
    run.write_env(env)
    run.write_env(env, node="n1")
    run.write_verdict(report.verdict)
    record = read_run(run.path)
    assert record.results() == {cell.id: cell}
    assert record.envs == {env.key: env}
    assert record.manifest == manifest
    assert record.verdict == report.verdict
    assert record.starts[0].job == {"job": "x"} and record.starts[0].run_id == "id1"
    assert layout.env_file(run.path, env.key, "n1").is_file()
    finished = [e for e in record.journal if e.event == "cell_finished"]
    assert codec.load(CellResult, finished[0].fields["result"]) == cell


def test_a_manifest_of_one_machine_names_no_nodes(real_run: tuple[Path, MatrixReport]) -> None:
    out, _ = real_run
    assert "nodes" not in json.loads((out / layout.MANIFEST).read_text())
    manifest, recipe = require_manifest(out, hint="a matrix run")
    assert manifest.nodes is None and recipe.name == "rd"


def test_a_schema_1_run_reads_through_the_chain() -> None:
    """A real run of the previous vllmdiag, stopped in its second cell."""
    run = FIXTURES / "schema1-run" / "run"
    record = read_run(run)
    assert record.warnings == ()
    result = record.cells["r1.baseline.quick"].result
    assert result is not None and result.reuse_key == "5fc5683758bbc26778fe"
    assert result.fingerprint is not None and result.outcome is Outcome.PASS
    assert record.cells["r1.baseline.slow"].result is None  # it never finished
    started = record.cells["r1.baseline.quick"].journal
    assert started.env_by_key == {"5fc5683758bbc26778fe": {}}  # schema 1's "fingerprint"
    assert record.manifest is not None and set(record.manifest.hygiene.per_leg) == {"bare"}
    (env,) = record.envs.values()
    assert env.stack.python == "3.11.7" and env.stack.flashinfer_python is None
    assert record.manifest.envs == record.envs
    raw = json.loads((run / "cells/r1.baseline.quick/result.json").read_text())
    assert dataclasses.replace(load_result(raw), log=result.log) == result
    assert recorded_outcome(run / "cells/r1.baseline.quick/log.txt") == "pass"


def test_a_copied_schema_1_run_resumes_its_journal_state(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "schema1-run" / "run", run)
    opened = RunDir.resume(run, "schema1")
    assert set(opened.finished()) == {"r1.baseline.quick"}


# -- no other module names the run directory's files ----------------------------------

#: File names only a run directory holds.
_RUN_FILES = (
    layout.EVENTS,
    layout.MANIFEST,
    layout.VERDICT,
    layout.RESULT,
    layout.SECRET_DIGESTS,
)
#: Folder names that are a run directory's when a path is built with them.
_RUN_FOLDERS = (layout.ENVS, layout.CELLS)
#: Modules that use one of those names for something else, and why.
_OTHER_USES = {
    # the env cache's own folder of environments, not a run's
    ("services/envs/cache.py", layout.ENVS),
    # vLLM's own ``vllm/envs`` module, read by the plugin probe
    ("probes/plugins.py", layout.ENVS),
    # names a capture directory may hold that are never traces (it skips them)
    ("readers/traces/leg.py", layout.RESULT),
    # finds the cells' logs in a directory to triage (it opens logs, not records)
    ("readers/triage/attribution.py", layout.CELLS),
    # a cluster node's scratch directory, outside the run directory
    ("adapters/cluster/ray_node.py", layout.CELLS),
}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            out.add(id(first.value))
    return out


def _uses(tree: ast.AST) -> set[str]:
    """Run-directory names the module's code (not its docstrings) builds paths with."""
    found: set[str] = set()
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            for name in _RUN_FILES:
                if re.search(rf"(^|/){re.escape(name)}($|/)", node.value):
                    found.add(name)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            right: Any = node.right
            if isinstance(right, ast.Constant) and right.value in _RUN_FOLDERS:
                found.add(right.value)
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    for name in _RUN_FOLDERS:
                        if part.value.startswith(name + "/"):
                            found.add(name)
    return found


def test_only_the_run_package_names_run_directory_files() -> None:
    offenders, seen = [], set()
    for file in sorted(PACKAGE.rglob("*.py")):
        if file.is_relative_to(RUN_PACKAGE):
            continue
        rel = file.relative_to(PACKAGE).as_posix()
        for name in sorted(_uses(ast.parse(file.read_text(encoding="utf-8")))):
            seen.add((rel, name))
            if (rel, name) not in _OTHER_USES:
                offenders.append(f"{rel}: {name}")
    assert offenders == [], "ask vllmdiag.spine.rundir (its layout, writer or reader)"
    assert seen >= _OTHER_USES, "an exception that is no longer needed"


def test_the_check_sees_a_module_that_opens_a_result() -> None:
    code = 'def f(run):\n    """Reads result.json."""\n    return run / "cells" / "result.json"\n'
    assert _uses(ast.parse(code)) == {"cells", "result.json"}
    assert _uses(ast.parse('x = f"envs/{key}.json"')) == {"envs"}
    assert _uses(ast.parse('hint = "it holds manifest.json"')) == set()
