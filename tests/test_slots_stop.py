"""Stopping a run whose cells run side by side: SIGTERM ends every running cell's whole
tree (a child that ignores TERM, a grandchild that left the session), journals each
interruption once, and a resume finishes the run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import observe

TREE = """
import os, subprocess, sys, time
out = sys.argv[1]
if os.path.exists(sys.argv[2]):
    print("quick"); sys.exit(0)
kid = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
esc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
    start_new_session=True)
open(os.path.join(out, "pids"), "w").write(f"{os.getpid()} {kid.pid} {esc.pid}")
print("engine up", os.environ.get("CUDA_VISIBLE_DEVICES"), flush=True)
time.sleep(600)
"""


def _recipe(tmp_path: Path) -> Path:
    (tmp_path / "tree.py").write_text(TREE)
    command = "{python} {recipe_dir}/tree.py {out_dir} {recipe_dir}/quick {flags}"
    body = f"""\
    name: stop2
    question: does a stop end every running cell?
    legs:
      here: {{path: {sys.executable}}}
    baseline: {{leg: here}}
    arms:
      - {{name: eager, flag: --enforce-eager}}
    workloads:
      w: {{command: "{command}"}}
    timeout: 300
    """
    path = tmp_path / "recipe.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def test_sigterm_ends_every_running_cell_then_resume_finishes(tmp_path: Path) -> None:
    path = _recipe(tmp_path)
    run_dir = tmp_path / "run"
    cli = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()", "matrix"]
    runner = subprocess.Popen(
        [*cli, str(path), "--out", str(run_dir), "--grace", "1", "--gpus", "2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pids = observe.pids_when_up(run_dir, "r1.baseline.w") + observe.pids_when_up(
        run_dir, "r1.eager.w"
    )
    runner.send_signal(signal.SIGTERM)
    stdout, stderr = runner.communicate(timeout=60)
    assert runner.returncode == 128 + signal.SIGTERM, stderr.decode()
    assert not [p for p in pids if observe.running(p)], "a cell's tree outlived the stop"
    events = [json.loads(x) for x in (run_dir / "run.jsonl").read_text().splitlines()]
    interrupted = sorted(e["id"] for e in events if e["event"] == "cell_interrupted")
    assert interrupted == ["r1.baseline.w", "r1.eager.w"]
    assert events[-1]["event"] == "run_finished" and events[-1]["status"] == "interrupted"
    report = json.loads(stdout)
    assert {c["outcome"] for c in report["cells"]} == {"skipped"}

    (tmp_path / "quick").write_text("")
    resumed = subprocess.run(
        [*cli, str(path), "--resume", str(run_dir), "--gpus", "2", "--json"],
        capture_output=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert {c["outcome"] for c in json.loads(resumed.stdout)["cells"]} == {"pass"}
