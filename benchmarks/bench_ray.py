"""Cells across nodes: what Ray costs per cell, and what several nodes save.

    python benchmarks/bench_ray.py [--cells 30] [--sleep-cells 24] [--nodes 4]

1. Overhead per cell: a matrix of N cells that each run ``python -c pass`` on an existing
   leg, on the local executor and on a one-node local Ray cluster, one cell at a time on
   both. The figure is (Ray cell time - local cell time) / N, cell time measured from
   each ``cell_started`` to its ``cell_finished`` in the journal; connecting (starting the
   runners) is paid once per run and reported apart.
2. Wall time of a metric matrix of M cells that each sleep one second (node-exclusive:
   one cell per node at a time), on one Ray node against N Ray nodes of one local
   cluster, and on the local executor (the seeds' way: strictly serial on one node).
3. The same M cells as a pass/fail matrix on the local executor with four fake GPU
   slots (``--gpus 4``) against one slot: what GPU-slot sharing saves on one node.

Needs the ray extra. Nothing is written to the user's cache: a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any


def _recipe(tmp: Path, name: str, cells: int, command: str, *, metric: bool) -> Path:
    workloads = "\n".join(f"  w{i}: {{command: {command}, gpus: 0}}" for i in range(cells))
    metrics = "metrics:\n  - {name: ok, regex: '(1)'}\n" if metric else ""
    path = tmp / f"{name}.yaml"
    path.write_text(
        f"name: {name}\nquestion: bench\nlegs:\n  here: {{path: {sys.executable}}}\n"
        f"baseline: {{leg: here}}\nworkloads:\n{workloads}\n{metrics}timeout: 300\n"
    )
    return path


def _run(recipe: Path, out: Path, executor: Any) -> dict[str, float]:
    from vllmdiag import MatrixOptions, run_matrix
    from vllmdiag.services.config import load_recipe

    start = time.perf_counter()
    report = run_matrix(load_recipe(recipe), MatrixOptions(out=out, executor=executor))
    wall = time.perf_counter() - start
    assert {c.outcome.value for c in report.cells} == {"pass"}, report.cells
    events = [json.loads(x) for x in (out / "run.jsonl").read_text().splitlines()]
    starts = {e["id"]: e["ts"] for e in events if e["event"] == "cell_started"}
    ends = {e["id"]: e["ts"] for e in events if e["event"] == "cell_finished"}
    cells = sum(
        (datetime.fromisoformat(ends[k]) - datetime.fromisoformat(v)).total_seconds()
        for k, v in starts.items()
    )
    first = min(datetime.fromisoformat(v) for v in starts.values())
    last = max(datetime.fromisoformat(v) for v in ends.values())
    return {"wall_s": wall, "cells_s": cells, "span_s": (last - first).total_seconds()}


def _cluster(nodes: int) -> Any:
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 0})
    for _ in range(nodes - 1):
        c.add_node(num_cpus=1, num_gpus=0)
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False, logging_level=logging.ERROR)
    return c


def _on_cluster(nodes: int, recipe: Path, out: Path) -> dict[str, float]:
    import ray

    from vllmdiag.adapters.cluster import RayExecutor

    c = _cluster(nodes)
    try:
        t0 = time.perf_counter()
        with RayExecutor() as executor:
            connect = time.perf_counter() - t0
            figures = _run(recipe, out, executor)
        return {**figures, "connect_s": connect}
    finally:
        ray.shutdown()
        c.shutdown()


def main() -> None:
    from vllmdiag.spine.runner import LocalExecutor

    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=30)
    parser.add_argument("--sleep-cells", type=int, default=24)
    parser.add_argument("--nodes", type=int, default=4)
    args = parser.parse_args()
    quick = '["{python}", "-c", "pass"]'
    sleep = '["{python}", "-c", "import time; time.sleep(1); print(1)"]'
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as d:
        tmp = Path(d)
        os.environ["VLLMDIAG_CACHE"] = str(tmp / "cache")
        os.environ["VLLMDIAG_LOCK"] = str(tmp / "node.lock")
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        over = _recipe(tmp, "overhead", args.cells, quick, metric=False)
        out["local"] = _run(over, tmp / "over-local", LocalExecutor())
        out["ray_1_node"] = _on_cluster(1, over, tmp / "over-ray")
        per_cell = (out["ray_1_node"]["cells_s"] - out["local"]["cells_s"]) / args.cells
        timed = _recipe(tmp, "sleeps", args.sleep_cells, sleep, metric=True)
        out["sleep_local_serial"] = _run(timed, tmp / "sleep-local", LocalExecutor())
        out["sleep_ray_1"] = _on_cluster(1, timed, tmp / "sleep-ray-1")
        out[f"sleep_ray_{args.nodes}"] = _on_cluster(args.nodes, timed, tmp / "sleep-ray-n")
        shared = _recipe(tmp, "shared", args.sleep_cells, sleep, metric=False)
        shared.write_text(shared.read_text().replace(", gpus: 0}", "}"))
        out["slots_local_1"] = _run(shared, tmp / "slots-1", LocalExecutor(gpus=1))
        out["slots_local_4"] = _run(shared, tmp / "slots-4", LocalExecutor(gpus=4))
    n = args.nodes
    print(
        f"Ray overhead per cell over the local executor: {per_cell * 1000:.0f} ms "
        f"({args.cells} cells: {out['ray_1_node']['cells_s']:.2f} s in cells on Ray vs "
        f"{out['local']['cells_s']:.2f} s locally; connecting once: "
        f"{out['ray_1_node']['connect_s']:.2f} s)"
    )
    print(
        f"{args.sleep_cells} one-second cells, node-exclusive: {n} Ray nodes "
        f"{out[f'sleep_ray_{n}']['wall_s']:.1f} s wall ({out[f'sleep_ray_{n}']['span_s']:.1f} s "
        f"first start to last end) vs 1 Ray node {out['sleep_ray_1']['wall_s']:.1f} s "
        f"({out['sleep_ray_1']['span_s']:.1f} s) vs local serial "
        f"{out['sleep_local_serial']['wall_s']:.1f} s"
    )
    print(
        f"the same cells pass/fail on the local executor: 4 GPU slots "
        f"{out['slots_local_4']['wall_s']:.1f} s vs 1 slot {out['slots_local_1']['wall_s']:.1f} s"
    )
    out["overhead_per_cell_s"] = per_cell
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
