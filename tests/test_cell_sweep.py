"""What a cell starts ends with it: a daemon it double-forks out of its session (tagged, or
started under ``env -i`` so that it carries no tag) is ended when the cell ends, the
journal and summary.md say which, and the cell never inherits vllmdiag's own settings."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import observe
from typer.testing import CliRunner

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
    (tmp_path / "daemons.py").write_text(WORKLOAD)
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: daemons
            question: does a daemon outlive its cell?
            legs:
              here:
                path: {sys.executable}
            baseline: {{leg: here}}
            workloads:
              w: {{command: "{{python}} {{recipe_dir}}/daemons.py {{out_dir}}"}}
            timeout: 120
            """
        )
    )
    return path


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


def test_a_cell_does_not_inherit_vllmdiags_cache_or_lock(tmp_path: Path) -> None:
    # conftest sets VLLMDIAG_CACHE and VLLMDIAG_LOCK for every test
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["matrix", str(_recipe(tmp_path)), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    seen = json.loads((run_dir / "cells" / "r1.baseline.w" / "out" / "env.json").read_text())
    assert "VLLMDIAG_CACHE" not in seen and "VLLMDIAG_LOCK" not in seen
    assert seen["VLLMDIAG_CELL_TAG"].endswith(":r1.baseline.w")  # the tag still is
