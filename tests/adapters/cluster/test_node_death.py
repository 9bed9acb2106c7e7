"""Nodes with their own env caches, on a real local Ray cluster: each builds its legs
itself (a head without GPUs builds none). Then a node dies mid-cell (its raylet is
killed while a cell runs there): that cell is an ERROR naming the node (never a fail),
the other cells finish on the live node, the cell's tree on the lost node is ended, and a
resume runs the cell again and completes the run with nothing lost."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import observe

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = [pytest.mark.ray, pytest.mark.slow]

FAST_HEALTH = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}

WORK = """
import os, sys, time
name, marker = sys.argv[1], sys.argv[2]
print("pid", os.getpid(), flush=True)
if name == "victim" and not os.path.exists(marker):
    time.sleep(600)
time.sleep(0.5)
print("done", name)
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(tmp_path_factory.mktemp("ray-home")))
        mp.setenv("VLLMDIAG_CACHE", str(tmp_path_factory.mktemp("ray-node-cache")))
        mp.setenv(
            "UV_CACHE_DIR",
            os.environ.get("VLLMDIAG_TEST_UV_CACHE")
            or str(Path(tempfile.gettempdir()) / f"vllmdiag-test-uv-cache-{os.getuid()}"),
        )
        c = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "num_gpus": 0, "_system_config": FAST_HEALTH},
        )
        for i in range(2):
            own = {"VLLMDIAG_CACHE": str(tmp_path_factory.mktemp(f"ray-cache-w{i}"))}
            c.add_node(num_cpus=1, num_gpus=1, env_vars=own)
        c.wait_for_nodes()
        ray.init(address=c.address, log_to_driver=False, logging_level=logging.ERROR)
    try:
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


def _started_on(run_dir: Path, cell: str) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for e in observe.events(run_dir):
            if e["event"] == "cell_spawned" and e["id"] == cell:
                return str(e["node"])
        time.sleep(0.1)
    raise AssertionError(f"{cell} never started")


@pytest.mark.network
def test_each_node_builds_its_legs_in_its_own_cache(cluster: Any, tmp_path: Path) -> None:
    from vllmdiag import MatrixOptions, RayExecutor, RunOptions, load_recipe

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        textwrap.dedent(
            """\
            name: built
            question: is each leg built where it runs?
            legs:
              pkg: {requirements: [packaging==24.2]}
            baseline: {leg: pkg}
            arms:
              - {name: a1, env: {A: "1"}}
              - {name: a2, env: {A: "2"}}
            workloads:
              w: {command: ["{python}", "-c", "import packaging; print(packaging.__version__)"]}
            timeout: 120
            """
        )
    )
    from vllmdiag import run_matrix

    with RayExecutor() as executor:
        report = run_matrix(
            load_recipe(recipe),
            MatrixOptions(out=tmp_path / "run", run=RunOptions(executor=executor)),
        )
    assert {c.outcome.value for c in report.cells} == {"pass"}
    nodes = json.loads((tmp_path / "run" / "manifest.json").read_text())["nodes"]
    paths = {label: [e["path"] for e in info["envs"].values()] for label, info in nodes.items()}
    built = {label: p[0] for label, p in paths.items() if p}
    assert len(built) == 2 and len(set(built.values())) == 2, paths  # one per worker cache
    assert [p for p in paths.values() if not p] == [[]]  # the head has no GPU: no leg
    kinds = [e["kind"] for e in observe.events(tmp_path / "run") if e["event"] == "env_event"]
    assert kinds.count("building") == 2


def test_a_dead_node_makes_its_cell_an_error_and_resume_completes(
    cluster: Any, tmp_path: Path
) -> None:
    (tmp_path / "work.py").write_text(WORK)
    body = f"""\
    name: death
    question: what happens when a node dies mid-cell?
    legs:
      here: {{path: {sys.executable}}}
    baseline: {{leg: here}}
    workloads:
      victim: {{command: "{{python}} {{recipe_dir}}/work.py victim {{recipe_dir}}/marker"}}
      w1: {{command: "{{python}} {{recipe_dir}}/work.py w1 x"}}
      w2: {{command: "{{python}} {{recipe_dir}}/work.py w2 x"}}
      w3: {{command: "{{python}} {{recipe_dir}}/work.py w3 x"}}
    timeout: 300
    """
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(textwrap.dedent(body))
    run_dir = tmp_path / "run"
    cli = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()", "matrix"]
    ray_args = ["--executor", "ray", "--address", cluster.address, "--json"]
    head = subprocess.Popen(
        [*cli, str(recipe), "--out", str(run_dir), *ray_args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    label = _started_on(run_dir, "r1.baseline.victim")
    log = run_dir / "cells" / "r1.baseline.victim" / "log.txt"
    deadline = time.monotonic() + 30
    while "pid " not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "the victim's log never reached the head"
        time.sleep(0.1)
    victim_pid = int(log.read_text().split("pid ", 1)[1].split()[0])
    node = next(n for n in cluster.worker_nodes if label.endswith(n.node_id[:8]))
    node.all_processes["raylet"][0].process.kill()

    stdout, stderr = head.communicate(timeout=180)
    assert head.returncode == 0, stderr.decode()
    assert stdout, stderr.decode()
    cells = {c["id"]: c for c in json.loads(stdout)["cells"]}
    victim = cells["r1.baseline.victim"]
    assert victim["outcome"] == "error"
    assert victim["reason"].startswith(f"node {label} died mid-cell: ")
    assert all(cells[f"r1.baseline.w{i}"]["outcome"] == "pass" for i in (1, 2, 3))
    assert all(cells[f"r1.baseline.w{i}"]["node"] != label for i in (1, 2, 3))
    assert "pid" in log.read_text(), "the log streamed before the death was lost"
    assert observe.gone_within(victim_pid, 30), "the lost node's cell kept running"

    (tmp_path / "marker").write_text("")
    resumed = subprocess.run(
        [*cli, str(recipe), "--resume", str(run_dir), *ray_args],
        capture_output=True,
        timeout=180,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()
    again = {c["id"]: c for c in json.loads(resumed.stdout)["cells"]}
    assert {c["outcome"] for c in again.values()} == {"pass"}
    events = observe.events(run_dir)
    reused = {e["id"] for e in events if e["event"] == "cell_reused"}
    assert reused == {"r1.baseline.w1", "r1.baseline.w2", "r1.baseline.w3"}
    for i in (1, 2, 3):  # nothing that had finished was lost or run again
        assert again[f"r1.baseline.w{i}"] == cells[f"r1.baseline.w{i}"]
    assert (run_dir / "cells" / "r1.baseline.victim" / "log.previous.txt").exists()
