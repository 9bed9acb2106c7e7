"""Matrices on a real Ray cluster of three local nodes (a head without GPUs and two
workers with two fake GPUs each), never a mock: the CPU reproduction's verdict is the
same as on this machine alone, pass/fail cells share a node on disjoint GPUs, a metric
matrix holds each node alone, logs reach the head while a cell runs, and SIGTERM on the
head ends the cells' trees on their nodes."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import observe
from tests.support.paths import REPO
from vllmdiag import MatrixOptions, RunOptions, run_matrix
from vllmdiag.adapters.cluster import RayExecutor
from vllmdiag.model.verdict import Effect
from vllmdiag.services.config import load_recipe

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = [pytest.mark.ray, pytest.mark.slow]

#: A dead node is noticed within about two seconds (Ray's default is tens of seconds).
FAST_HEALTH = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}
UV_CACHE = os.environ.get("VLLMDIAG_TEST_UV_CACHE") or str(
    Path(tempfile.gettempdir()) / f"vllmdiag-test-uv-cache-{os.getuid()}"
)

STAMP = """
import json, os, sys, time
out, seconds = sys.argv[1], float(sys.argv[2])
start = time.time()
print("cell up", flush=True)
while not os.path.exists(sys.argv[3]) and time.time() - start < seconds:
    time.sleep(0.05)
json.dump({"cvd": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": start, "end": time.time(),
           "ray": sorted(k for k in os.environ if k.startswith("RAY_"))},
          open(os.path.join(out, "stamp.json"), "w"))
print("tokens/s: 100.0")
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Three raylets on this machine; their workers get their own home and env cache."""
    env = {
        "HOME": str(tmp_path_factory.mktemp("ray-home")),
        "VLLMDIAG_CACHE": str(tmp_path_factory.mktemp("ray-node-cache")),
        "UV_CACHE_DIR": UV_CACHE,
    }
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        c = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "num_gpus": 0, "_system_config": FAST_HEALTH},
        )
        for _ in range(2):
            c.add_node(num_cpus=1, num_gpus=2)
        c.wait_for_nodes()
        ray.init(address=c.address, log_to_driver=False, logging_level=logging.ERROR)
    try:
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


@pytest.mark.network
def test_cpu_reproduction_gives_the_same_verdict_on_ray_as_locally(
    cluster: Any, tmp_path: Path
) -> None:
    recipe = load_recipe(REPO / "recipes/thrmma-cpu.yaml")
    local = run_matrix(recipe, MatrixOptions(out=tmp_path / "local"))
    with RayExecutor() as executor:
        on_ray = run_matrix(
            recipe, MatrixOptions(out=tmp_path / "ray", run=RunOptions(executor=executor))
        )
    effects = {a.name: a.effect for a in on_ray.verdict.arms}
    assert effects == {
        "omp-num-threads-1": Effect.RULED_OUT,
        "enforce-eager": Effect.RULED_OUT,
        "nvidia-cutlass-dsl-4.5.3": Effect.SUFFICIENT,
    }
    assert effects == {a.name: a.effect for a in local.verdict.arms}
    assert [(c.id, c.outcome) for c in on_ray.cells] == [(c.id, c.outcome) for c in local.cells]
    labels = {n: info["id"] for n, info in _manifest(tmp_path / "ray")["nodes"].items()}
    assert len(labels) == 3
    for cell in on_ray.cells:
        assert cell.node in labels, cell
        log = (tmp_path / "ray" / "cells" / cell.id / "log.txt").read_text()
        assert "engine_start.py" in log
    failing = next(c for c in on_ray.cells if c.arm == "baseline")
    assert failing.root_cause is not None and "ThrMma" in (failing.root_cause.message or "")
    for info in _manifest(tmp_path / "ray")["nodes"].values():  # doctor ran on every node
        assert set(info["hygiene"]["per_leg"]) == {"fresh", "fresh+nvidia-cutlass-dsl==4.5.3"}
    journal = [json.loads(x) for x in (tmp_path / "ray" / "run.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in journal if e["event"] == "env_event"]
    # one env cache shared by the three nodes: each leg built once, then verified and reused
    assert kinds.count("building") == 2 and kinds.count("reused") == 4


def _manifest(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "manifest.json").read_text())
    return data


def test_pass_fail_cells_share_nodes_on_disjoint_fake_gpus(cluster: Any, tmp_path: Path) -> None:
    arms = "\n".join(f'  - {{name: a{i}, env: {{A: "{i}"}}}}' for i in range(5))
    path = observe.stamp_recipe(
        tmp_path,
        "spread",
        STAMP,
        f"""\
arms:
{arms}
workloads:
  w: {{command: "{{python}} {{recipe_dir}}/stamp.py {{out_dir}} 2 /nonexistent"}}
timeout: 60
""",
    )
    with RayExecutor() as executor:
        report = run_matrix(
            load_recipe(path),
            MatrixOptions(out=tmp_path / "run", run=RunOptions(executor=executor)),
        )
    assert {c.outcome.value for c in report.cells} == {"pass"}
    nodes = {c.id: c.node for c in report.cells}
    gpu_nodes = {
        label for label, info in _manifest(tmp_path / "run")["nodes"].items() if info["gpus"]
    }
    assert set(nodes.values()) <= gpu_nodes, "a cell that needs a GPU ran on the head"
    stamps = observe.stamps(tmp_path / "run")
    assert len(stamps) == 6
    assert all(s["ray"] == [] for s in stamps.values()), "Ray's worker variables leaked"
    overlapping = 0
    for a in stamps:
        for b in stamps:
            if a < b and nodes[a] == nodes[b] and observe.overlap(stamps[a], stamps[b]):
                overlapping += 1
                assert stamps[a]["cvd"] != stamps[b]["cvd"], f"{a} and {b} shared a GPU"
    assert overlapping >= 1
    assert {s["cvd"] for s in stamps.values()} <= {"0", "1"}
    busiest = max(
        sum(1 for b in stamps if nodes[b] == nodes[a] and observe.overlap(stamps[a], stamps[b]))
        for a in stamps
    )
    assert busiest <= 2  # each worker has two GPUs


def test_a_metric_matrix_holds_each_node_alone(cluster: Any, tmp_path: Path) -> None:
    path = observe.stamp_recipe(
        tmp_path,
        "spread",
        STAMP,
        """\
arms:
  - {name: a1, env: {A: "1"}}
  - {name: a2, env: {A: "2"}}
  - {name: a3, env: {A: "3"}}
workloads:
  w: {command: "{python} {recipe_dir}/stamp.py {out_dir} 1 /nonexistent"}
metrics:
  - {name: tps, regex: 'tokens/s: ([0-9.]+)'}
timeout: 60
""",
    )
    with RayExecutor() as executor:
        report = run_matrix(
            load_recipe(path),
            MatrixOptions(out=tmp_path / "run", run=RunOptions(executor=executor)),
        )
    assert {c.outcome.value for c in report.cells} == {"pass"}
    nodes = {c.id: c.node for c in report.cells}
    stamps = observe.stamps(tmp_path / "run")
    across = 0
    for a in stamps:
        for b in stamps:
            if a < b and observe.overlap(stamps[a], stamps[b]):
                assert nodes[a] != nodes[b], f"{a} and {b} shared a node"
                across += 1
    assert across >= 1, "no two nodes ran at once"
    assert {s["cvd"] for s in stamps.values()} == {None}


def test_sigterm_on_the_head_ends_the_trees_on_the_nodes(cluster: Any, tmp_path: Path) -> None:
    marker = tmp_path / "go"
    tree = """
import os, subprocess, sys, time
kid = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
esc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
    start_new_session=True)
print("pids", os.getpid(), kid.pid, esc.pid, flush=True)
time.sleep(600)
"""
    (tmp_path / "tree.py").write_text(tree)
    path = observe.stamp_recipe(
        tmp_path,
        "spread",
        STAMP,
        """\
arms:
  - {name: a1, env: {A: "1"}}
workloads:
  w: {command: "{python} {recipe_dir}/tree.py", gpus: 2}
timeout: 300
""",
    )
    run_dir = tmp_path / "run"
    cli = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()", "matrix"]
    head = subprocess.Popen(
        [
            *cli,
            str(path),
            "--out",
            str(run_dir),
            "--executor",
            "ray",
            "--address",
            cluster.address,
            "--grace",
            "1",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pids = [_pids_in_log(run_dir / "cells" / c / "log.txt") for c in ("r1.baseline.w", "r1.a1.w")]
    head.send_signal(signal.SIGTERM)
    stdout, stderr = head.communicate(timeout=120)
    assert head.returncode == 128 + signal.SIGTERM, stderr.decode()
    left = [p for tree_pids in pids for p in tree_pids if not observe.gone_within(p, 10)]
    assert not left, f"processes outlived the stop: {left}"
    events = [json.loads(x) for x in (run_dir / "run.jsonl").read_text().splitlines()]
    assert sorted(e["id"] for e in events if e["event"] == "cell_interrupted") == [
        "r1.a1.w",
        "r1.baseline.w",
    ]
    spawned = [e for e in events if e["event"] == "cell_spawned"]
    assert spawned and all(e["node"] for e in spawned)
    assert json.loads(stdout)["stopped_by"] == "SIGTERM"
    assert not marker.exists()


def _pids_in_log(log: Path) -> list[int]:
    """The tree's pids, read from the head's copy of the log: it streams as it grows."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if log.exists():
            for line in log.read_text().splitlines():
                if line.startswith("pids "):
                    return [int(p) for p in line.split()[1:]]
        time.sleep(0.1)
    raise AssertionError(f"{log} never showed the cell's pids")


def test_the_runners_see_each_node_as_it_is(cluster: Any, tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: x\n")
    with RayExecutor() as executor:
        nodes = executor.nodes()
        assert len(nodes) == 3
        assert sorted(n.gpus or () for n in nodes) == [(), ("0", "1"), ("0", "1")]
        assert len({n.label for n in nodes}) == 3
        assert all(n.sees(recipe) for n in nodes)  # one filesystem here
        assert not any(n.sees(tmp_path / "missing.yaml") for n in nodes)
        assert all(not any(k.startswith("RAY_") for k in n.base_environ()) for n in nodes)


def test_a_study_runs_on_the_cluster_each_cell_on_a_node_of_its_own(
    cluster: Any, tmp_path: Path
) -> None:
    """``vllmdiag study --executor ray``: the same batch, tables and canonical runs as on
    this machine, its cells spread over the workers (a study measures: a node per cell)."""
    from importlib.metadata import version

    from typer.testing import CliRunner

    from tests.jobs.study.test_run import recipe, rows, speed
    from vllmdiag.cli.app import app

    path = recipe(tmp_path / "recipe", uv_leg=False)
    out = tmp_path / "study"
    res = CliRunner().invoke(
        app,
        ["study", str(path), "--out", str(out), "--executor", "ray", "--address", "auto", "--json"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    cells = data["cells"]
    assert {c["outcome"] for c in cells} == {"pass"}
    assert len({c["node"] for c in cells}) == 2  # both workers (the head has no GPU)
    here = speed(version("packaging"))
    assert rows(data, "throughput") == {
        "alpha.mixed": [1000.0 * here],
        "beta.mixed": [2500.0 * 2 * here],
    }
    assert (out / "REPORT.md").is_file() and (out / "MANIFEST.md").is_file()


HANG = """
import os, sys, threading
def wait_on_the_node():
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()
print("cell up", flush=True)
wait_on_the_node()
"""


def test_a_cell_that_hangs_on_a_node_is_dumped_there_and_named_on_the_head(
    cluster: Any, tmp_path: Path
) -> None:
    path = observe.stamp_recipe(
        tmp_path,
        "hang",
        HANG,
        """\
workloads:
  w: {command: "{python} {recipe_dir}/stamp.py"}
timeout: 4
""",
    )
    with RayExecutor() as executor:
        report = run_matrix(
            load_recipe(path),
            MatrixOptions(out=tmp_path / "run", run=RunOptions(executor=executor, grace_s=1)),
        )
    cell = report.cells[0]
    assert cell.outcome.value == "timeout" and cell.node
    hang = cell.hang
    assert hang is not None and hang.stuck is not None, hang
    assert hang.stuck.frames[0].function == "wait_on_the_node"
    dumps = sorted((tmp_path / "run/cells" / cell.id / "hang").glob("py-spy-*.txt"))
    assert [p.name for p in dumps] == [f"py-spy-{hang.stuck.pid}.txt"]
    assert "wait_on_the_node" in dumps[0].read_text()
    assert cell.root_cause is not None and "killed at its 4 s timeout" in (
        cell.root_cause.message or ""
    )
    assert not observe.running(hang.stuck.pid)
