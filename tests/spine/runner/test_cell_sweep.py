"""What a cell starts ends with it: a daemon it double-forks out of its session (tagged, or
started under ``env -i`` so that it carries no tag) is ended when the cell ends, the
journal and summary.md say which, and the cell never inherits vllmdiag's own settings."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from tests.support import observe
from tests.support.recipes import write_recipe
from vllmdiag.cli.app import app

WORKLOAD = r'''
import json, os, subprocess, sys, time
out = sys.argv[1]
DAEMON = """
import os, sys, time
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(600)
"""
subprocess.run([sys.executable, "-c", DAEMON, os.path.join(out, "tagged")], check=True)
subprocess.run(["env", "-i", sys.executable, "-c", DAEMON, os.path.join(out, "untagged")],
               check=True)
deadline = time.monotonic() + 30
while not all(os.path.exists(os.path.join(out, n)) for n in ("tagged", "untagged")):
    assert time.monotonic() < deadline
    time.sleep(0.02)
mine = {k: v for k, v in os.environ.items() if k.startswith("VLLMDIAG_")}
json.dump(mine, open(os.path.join(out, "env.json"), "w"))
print("daemons up", flush=True)
'''


def _recipe(tmp_path: Path) -> Path:
    body = """\
    baseline: {leg: here}
    workloads:
      w: {command: "{python} {recipe_dir}/daemons.py {out_dir}"}
    timeout: 120
    """
    return write_recipe(
        tmp_path,
        body,
        name="daemons",
        question="does a daemon outlive its cell?",
        scripts={"daemons.py": WORKLOAD},
    )


def test_a_cells_daemons_end_with_it_tagged_or_not(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["matrix", str(_recipe(tmp_path)), "--out", str(run_dir), "--grace", "1"]
    )
    assert result.exit_code == 0, result.output
    out = run_dir / "cells" / "r1.baseline.w" / "out"
    daemons = {name: int((out / name).read_text()) for name in ("tagged", "untagged")}
    assert all(observe.gone_within(pid, 5) for pid in daemons.values()), daemons
    swept = [e for e in observe.events(run_dir) if e["event"] == "cell_swept"]
    assert len(swept) == 1 and swept[0]["id"] == "r1.baseline.w"
    assert set(daemons.values()) <= set(swept[0]["pids"])
    summary = (run_dir / "summary.md").read_text()
    assert "## Processes ended" in summary
    assert f"`r1.baseline.w`: ended {len(swept[0]['pids'])} process(es)" in summary
    assert str(daemons["untagged"]) in summary
    said = " ".join(result.output.split())
    assert f"r1.baseline.w: ended {len(swept[0]['pids'])} process(es) it left running" in said


def test_a_cell_does_not_inherit_vllmdiags_cache_or_lock(tmp_path: Path) -> None:
    # conftest sets VLLMDIAG_CACHE and VLLMDIAG_LOCK for every test
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["matrix", str(_recipe(tmp_path)), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    seen = json.loads((run_dir / "cells" / "r1.baseline.w" / "out" / "env.json").read_text())
    assert "VLLMDIAG_CACHE" not in seen and "VLLMDIAG_LOCK" not in seen
    assert seen["VLLMDIAG_CELL_TAG"].endswith(":r1.baseline.w")  # the tag still is


OVERLAP = r'''
import os, subprocess, sys, time
out, role = sys.argv[1], sys.argv[2]
DAEMON = """
import os, sys, time
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(600)
"""
pid_file = os.path.join(out, "daemon")
subprocess.run(["env", "-i", sys.executable, "-c", DAEMON, pid_file], check=True)
while not os.path.exists(pid_file):
    time.sleep(0.02)
if role == "fast":
    time.sleep(1)
    sys.exit(0)
fast = os.path.join(out, "..", "..", "r1.baseline.fast", "result.json")
deadline = time.monotonic() + 60
while not os.path.exists(fast):
    assert time.monotonic() < deadline, "the fast cell never finished"
    time.sleep(0.05)
time.sleep(1.5)  # the fast cell's sweep is over
pid = int(open(pid_file).read())
alive = os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split(") ")[1][0] != "Z"
print("own daemon alive after the other cell ended:", alive)
sys.exit(0 if alive else 1)
'''


def test_an_untagged_daemon_of_a_running_cell_survives_another_cells_end(tmp_path: Path) -> None:
    """Two cells side by side, each with an ``env -i`` daemon: the one that ends first
    must not take the other's daemon for its own; both daemons end by the run's end."""
    (tmp_path / "overlap.py").write_text(OVERLAP)
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: overlap
            question: whose daemon is it?
            legs:
              here: {{path: {sys.executable}}}
            baseline: {{leg: here}}
            workloads:
              slow: {{command: "{{python}} {{recipe_dir}}/overlap.py {{out_dir}} slow"}}
              fast: {{command: "{{python}} {{recipe_dir}}/overlap.py {{out_dir}} fast"}}
            timeout: 120
            """
        )
    )
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["matrix", str(path), "--out", str(run_dir), "--gpus", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    outcomes = {c["id"]: c["outcome"] for c in json.loads(result.stdout)["cells"]}
    assert outcomes == {"r1.baseline.slow": "pass", "r1.baseline.fast": "pass"}, outcomes
    daemons = [
        int((run_dir / "cells" / c / "out" / "daemon").read_text())
        for c in ("r1.baseline.slow", "r1.baseline.fast")
    ]
    assert all(observe.gone_within(pid, 5) for pid in daemons)
    swept = {p for e in observe.events(run_dir) if e["event"] == "cell_swept" for p in e["pids"]}
    assert set(daemons) <= swept
