"""The matrix runner for real: real child processes, a real run directory, resume after
SIGKILL, timeouts, environment hygiene and both kinds of verdict."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import REPO
from tests.support.recipes import write_recipe
from vllmdiag import MatrixOptions, RunOptions, run_matrix
from vllmdiag.cli.app import app
from vllmdiag.errors import VllmdiagError
from vllmdiag.model.outcome import Outcome
from vllmdiag.services.config import load_recipe
from vllmdiag.services.locks import file_lock
from vllmdiag.services.paths import node_lock_path


def script(tmp_path: Path, name: str, code: str) -> None:
    (tmp_path / name).write_text(textwrap.dedent(code))


def events(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (run_dir / "run.jsonl").read_text().splitlines()]


def test_sigkill_mid_cell_then_resume_loses_nothing_finished(tmp_path: Path) -> None:
    script(
        tmp_path,
        "work.py",
        """
        import os, sys, time
        name, slow_marker = sys.argv[1], sys.argv[2]
        open(os.path.join(sys.argv[3], "pid"), "w").write(str(os.getpid()))
        if name == "w2" and not os.path.exists(slow_marker):
            time.sleep(120)
        print("done", name)
    """,
    )
    path = write_recipe(
        tmp_path,
        """
        baseline: {leg: here}
        workloads:
          w1: {command: "{python} {recipe_dir}/work.py w1 {recipe_dir}/fast {out_dir}"}
          w2: {command: "{python} {recipe_dir}/work.py w2 {recipe_dir}/fast {out_dir}"}
          w3: {command: "{python} {recipe_dir}/work.py w3 {recipe_dir}/fast {out_dir}"}
        timeout: 300
    """,
    )
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable,
        "-c",
        "from vllmdiag.cli.app import main; main()",
        "matrix",
        str(path),
        "--out",
        str(run_dir),
    ]
    runner = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    started = False
    while time.monotonic() < deadline and not started:
        time.sleep(0.1)
        if (run_dir / "run.jsonl").exists():
            started = any(
                e.get("event") == "cell_started" and e.get("id") == "r1.baseline.w2"
                for e in events(run_dir)
            )
    assert started, "cell 2 never started"
    first = (run_dir / "cells/r1.baseline.w1/result.json").read_text()
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    orphan = run_dir / "cells/r1.baseline.w2/out/pid"
    deadline = time.monotonic() + 10
    # the child creates its pid file before it writes the pid: wait for the number
    while not (orphan.exists() and orphan.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(int(orphan.read_text()), signal.SIGKILL)  # the node went down with it
    assert not (run_dir / "cells/r1.baseline.w2/result.json").exists()

    (tmp_path / "fast").write_text("")
    result = CliRunner().invoke(app, ["matrix", str(path), "--resume", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [c["outcome"] for c in report["cells"]] == ["pass", "pass", "pass"]
    assert (run_dir / "cells/r1.baseline.w1/result.json").read_text() == first
    kinds = [(e["event"], e.get("id")) for e in events(run_dir)]
    assert ("cell_reused", "r1.baseline.w1") in kinds
    assert kinds.count(("cell_started", "r1.baseline.w2")) == 2
    assert all(e["schema"] == 2 for e in events(run_dir))
    assert (run_dir / "cells/r1.baseline.w2/log.previous.txt").exists()


def test_timeout_is_an_outcome_and_leaves_no_process(tmp_path: Path) -> None:
    script(
        tmp_path,
        "hang.py",
        """
        import os, signal, subprocess, sys, time
        kid = subprocess.Popen([sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
        open(os.path.join(sys.argv[1], "kid"), "w").write(str(kid.pid))
        time.sleep(600)
    """,
    )
    path = write_recipe(
        tmp_path,
        """
        baseline: {leg: here}
        workloads:
          hang: {command: ["{python}", "{recipe_dir}/hang.py", "{out_dir}"]}
        timeout: 2
    """,
    )
    report = run_matrix(
        load_recipe(path), MatrixOptions(out=tmp_path / "run", run=RunOptions(grace_s=1))
    )
    cell = report.cells[0]
    assert cell.outcome is Outcome.TIMEOUT and "killed after 2s" in cell.reason
    kid = int((tmp_path / "run/cells/r1.baseline.hang/out/kid").read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{kid}").exists() or "Z" in Path(f"/proc/{kid}/stat").read_text()


def test_inherited_variables_are_cleared_unless_the_recipe_sets_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_LEAKED", "1")
    monkeypatch.setenv("PYTHONPATH", "/bogus")
    script(
        tmp_path,
        "env.py",
        """
        import json, os, sys
        json.dump(dict(os.environ), open(os.path.join(sys.argv[1], "env.json"), "w"))
    """,
    )
    path = write_recipe(
        tmp_path,
        """
        baseline: {leg: here, env: {VLLM_WANTED: "yes"}}
        workloads:
          env: {command: ["{python}", "{recipe_dir}/env.py", "{out_dir}"]}
    """,
    )
    report = run_matrix(load_recipe(path), MatrixOptions(out=tmp_path / "run"))
    assert report.cells[0].outcome is Outcome.PASS
    seen = json.loads((tmp_path / "run/cells/r1.baseline.env/out/env.json").read_text())
    assert "VLLM_LEAKED" not in seen and "PYTHONPATH" not in seen
    assert seen["VLLM_WANTED"] == "yes"
    assert seen["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert seen["VIRTUAL_ENV"]


def test_metric_matrix_medians_spread_and_no_difference(tmp_path: Path) -> None:
    script(
        tmp_path,
        "bench.py",
        """
        import json, os, sys
        cell = os.path.basename(os.path.dirname(sys.argv[1]))  # r<repeat>.<arm>.<workload>
        rep = int(cell.split(".")[0][1:])
        value = 100.0 * float(os.environ.get("SCALE", "1")) + rep  # a little spread
        json.dump({"tokens_per_second": value}, open(os.path.join(sys.argv[1], "r.json"), "w"))
    """,
    )
    path = write_recipe(
        tmp_path,
        """
        baseline: {leg: here}
        workloads:
          bench:
            command: ["{python}", "{recipe_dir}/bench.py", "{out_dir}"]
        arms:
          - {name: faster, env: {SCALE: "1.5"}}
          - {name: same, env: {UNRELATED: "1"}}
        repeats: 3
        metrics:
          - {name: tps, json: r.json, key: tokens_per_second}
    """,
    )
    result = CliRunner().invoke(
        app, ["matrix", str(path), "--out", str(tmp_path / "run"), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    arms = {a["name"]: a for a in report["verdict"]["arms"]}
    assert arms["faster"]["effect"] == "partial"
    assert arms["same"]["effect"] == "ruled_out"
    same = arms["same"]["workloads"]["bench"]
    assert same["median"] == 102.0 and same["difference_detected"] is False
    assert arms["faster"]["workloads"]["bench"]["ratio"] == pytest.approx(152 / 102)
    assert len(report["cells"]) == 9 and {c["outcome"] for c in report["cells"]} == {"pass"}
    assert [c["repeat"] for c in report["cells"]] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    md = (tmp_path / "run/summary.md").read_text()
    assert "| baseline | 102 ±1.0% |" in md
    assert (tmp_path / "run/summary.txt").exists() and (tmp_path / "run/verdict.json").exists()


def test_a_metric_that_is_not_written_is_an_error_not_a_zero(tmp_path: Path) -> None:
    path = write_recipe(
        tmp_path,
        """
        baseline: {leg: here}
        workloads:
          quiet: {command: ["{python}", "-c", "print('no numbers here')"]}
        metrics:
          - {name: tps, regex: 'tps=([0-9.]+)'}
    """,
    )
    report = run_matrix(load_recipe(path), MatrixOptions(out=tmp_path / "run"))
    cell = report.cells[0]
    assert cell.outcome is Outcome.ERROR and "no line of the log matches" in cell.reason


def test_the_node_lock_keeps_two_matrices_apart(tmp_path: Path) -> None:
    path = write_recipe(
        tmp_path,
        """
        baseline: {leg: here}
        workloads:
          w: {command: ["{python}", "-c", "pass"]}
    """,
    )
    with file_lock(node_lock_path()), pytest.raises(VllmdiagError, match="node lock"):
        run_matrix(load_recipe(path), MatrixOptions(out=tmp_path / "run"))


@pytest.mark.network
def test_a_leg_that_cannot_be_built_makes_its_cells_errors(tmp_path: Path) -> None:
    path = write_recipe(
        tmp_path,
        """
        baseline: {leg: here}
        workloads:
          w: {command: ["{python}", "-c", "raise SystemExit(1)"]}
        arms:
          - {name: bad-pin, pin: "packaging==0.0.0.1"}
    """,
    )
    # a path leg cannot take a pin: give the arm a buildable leg of its own instead
    text = (
        path.read_text()
        .replace("legs:\n", "legs:\n  built:\n    requirements: [packaging==0.0.0.1]\n")
        .replace('- {name: bad-pin, pin: "packaging==0.0.0.1"}', "- {name: bad-pin, leg: built}")
    )
    path.write_text(text)
    report = run_matrix(load_recipe(path), MatrixOptions(out=tmp_path / "run"))
    bad = next(r for r in report.cells if r.arm == "bad-pin")
    assert bad.outcome is Outcome.ERROR and "install failed" in bad.reason
    assert report.cells[0].outcome is Outcome.FAIL
    kinds = [e["event"] for e in events(tmp_path / "run")]
    assert "env_failed" in kinds and kinds[-1] == "run_finished"


@pytest.mark.network
@pytest.mark.slow
def test_cpu_reproduction_names_the_pin_as_the_one_sufficient_arm(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["matrix", str(REPO / "recipes/thrmma-cpu.yaml"), "--out", str(tmp_path / "run"), "--json"],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    effects = {a["name"]: a["effect"] for a in report["verdict"]["arms"]}
    assert effects == {
        "omp-num-threads-1": "ruled_out",
        "enforce-eager": "ruled_out",
        "nvidia-cutlass-dsl-4.5.3": "sufficient",
    }
    kinds = {a["name"]: a["kind"] for a in report["verdict"]["arms"]}
    assert kinds == {
        "omp-num-threads-1": "env",
        "enforce-eager": "flag",
        "nvidia-cutlass-dsl-4.5.3": "pin",
    }
    base = [c for c in report["cells"] if c["arm"] == "baseline"]
    assert {c["outcome"] for c in base} == {"fail"}
    root = base[0]["root_cause"]
    assert root["type"] == "AttributeError" and "ThrMma" in root["message"]
    envs = {e["leg"]: e for e in report["envs"].values()}
    assert envs["fresh+nvidia-cutlass-dsl==4.5.3"]["stack"]["nvidia_cutlass_dsl"] == "4.5.3"
    assert envs["fresh"]["stack"]["nvidia_cutlass_dsl"] != "4.5.3"


@pytest.mark.network
def test_single_cell_on_a_pinned_leg(tmp_path: Path) -> None:
    from vllmdiag.jobs.bisect.recipe_cell import run_one_cell

    rec = load_recipe(REPO / "recipes/thrmma-cpu.yaml")
    good = run_one_cell(rec, "wrapper-import", tmp_path / "a", "nvidia-cutlass-dsl==4.5.3")
    assert good.outcome is Outcome.PASS and good.leg == "fresh+nvidia-cutlass-dsl==4.5.3"
    bad = run_one_cell(
        rec, "r1.baseline.wrapper-import", tmp_path / "b", "nvidia-cutlass-dsl==4.6.0"
    )
    assert bad.outcome is Outcome.FAIL
    with pytest.raises(VllmdiagError, match="no cell"):
        run_one_cell(rec, "nope", tmp_path / "c", None)


def test_a_reader_failure_is_recorded_not_fatal(tmp_path: Path) -> None:
    from vllmdiag.spine.runner.readers import RunReaders

    not_a_log = tmp_path / "dir"
    not_a_log.mkdir()
    readers = RunReaders()
    assert "triage failed" in str(readers.root_cause(not_a_log).reader_error)
    fp, why = readers.fingerprint(not_a_log)
    assert fp is None and why is not None and "fingerprint failed" in why


def test_env_arm_after_a_flag_arm_on_the_same_leg_is_still_judged_inert(tmp_path: Path) -> None:
    from vllmdiag.services.envs import EnvCache, LegSpec

    env = EnvCache(tmp_path / "cache").ensure(LegSpec("with-envs"))
    site = next((env.path / "lib").glob("python3*/site-packages"))
    (site / "vllm").mkdir()
    (site / "vllm/__init__.py").write_text("")
    (site / "vllm/envs.py").write_text(  # the shape of vLLM's own module
        "import os\nenvironment_variables = {\n"
        '    "VLLM_LOGGING_LEVEL": lambda: os.getenv("VLLM_LOGGING_LEVEL", "INFO"),\n}\n'
    )
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: t
        question: does the legacy variable do anything?
        legs:
          here: {{path: {env.python}}}
        baseline: {{leg: here}}
        workloads:
          w: {{command: ["{{python}}", "-c", "raise SystemExit(1)", "{{flags}}"]}}
        arms:
          - {{name: eager, flag: --enforce-eager}}
          - {{name: legacy, env: {{VLLM_ATTENTION_BACKEND: TRITON_ATTN}}}}
        """)
    )
    report = run_matrix(load_recipe(path), MatrixOptions(out=tmp_path / "run"))
    effects = {a.name: (a.effect.value, a.detail) for a in report.verdict.arms}
    assert effects["eager"][0] == "ruled_out"
    assert effects["legacy"][0] == "inert"
    assert "does not know VLLM_ATTENTION_BACKEND" in effects["legacy"][1]
