"""Runner overhead per cell, and building a pin arm's derived leg from a warm uv cache.

    python benchmarks/bench_matrix.py [--cells 30]

1. Overhead: a matrix of N cells that each run ``python -c pass`` on an existing leg,
   against running the same command N times with plain ``subprocess.run`` in the same
   process. The figure is (matrix cell time - bare time) / N, where matrix cell time is
   measured from each ``cell_started`` to its ``cell_finished`` in the journal (env
   adoption and hygiene run once per matrix, not per cell, and are reported apart).
2. Derived leg: ``EnvCache.ensure`` of ``nvidia-cutlass-dsl==4.5.3`` into an empty env
   cache with uv's download cache warm, against the naive way (``python -m venv`` +
   ``pip install`` with pip's cache warm).

Nothing is written to the user's cache: both use a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path


def overhead(n: int, tmp: Path) -> dict[str, float]:
    from vllmdiag import MatrixOptions, run_matrix
    from vllmdiag.services.config import load_recipe

    workloads = "\n".join(f'  w{i}: {{command: ["{{python}}", "-c", "pass"]}}' for i in range(n))
    recipe = tmp / "overhead.yaml"
    recipe.write_text(
        f"name: overhead\nquestion: runner overhead\nlegs:\n  here: {{path: {sys.executable}}}\n"
        f"baseline: {{leg: here}}\nworkloads:\n{workloads}\n"
    )
    start = time.perf_counter()
    report = run_matrix(load_recipe(recipe), MatrixOptions(out=tmp / "run"))
    total = time.perf_counter() - start
    events = [json.loads(x) for x in (report.run_dir / "run.jsonl").read_text().splitlines()]
    starts = {e["id"]: e["ts"] for e in events if e["event"] == "cell_started"}
    ends = {e["id"]: e["ts"] for e in events if e["event"] == "cell_finished"}
    cell_s = sum(
        (datetime.fromisoformat(ends[k]) - datetime.fromisoformat(v)).total_seconds()
        for k, v in starts.items()
    )
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - t0
    return {
        "cells": n,
        "matrix_total_s": total,
        "matrix_cells_s": cell_s,
        "bare_s": bare,
        "overhead_per_cell_s": (cell_s - bare) / n,
        "setup_once_s": total - cell_s,
    }


def derived_leg(tmp: Path) -> dict[str, float]:
    from vllmdiag.services.envs import EnvCache, LegSpec

    base = LegSpec("fresh", ("nvidia-cutlass-dsl",))
    warm = EnvCache(tmp / "warm")
    warm.ensure(base)
    warm.ensure(base.with_pin("nvidia-cutlass-dsl==4.5.3"))  # fills uv's download cache
    cold = EnvCache(tmp / "cold")
    t0 = time.perf_counter()
    cold.ensure(base.with_pin("nvidia-cutlass-dsl==4.5.3"))
    ours = time.perf_counter() - t0
    venv = tmp / "naive"
    pip_cache = tmp / "pip-cache"
    env = {**os.environ, "PIP_CACHE_DIR": str(pip_cache), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "prewarm")], check=True)
    subprocess.run(
        [str(tmp / "prewarm/bin/pip"), "install", "-q", "nvidia-cutlass-dsl==4.5.3"],
        check=True,
        env=env,
    )
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin/pip"), "install", "-q", "nvidia-cutlass-dsl==4.5.3"], check=True, env=env
    )
    naive = time.perf_counter() - t0
    return {"derived_leg_s": ours, "naive_venv_pip_s": naive}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-matrix-") as d:
        tmp = Path(d)
        os.environ["VLLMDIAG_CACHE"] = str(tmp / "cache")
        os.environ["VLLMDIAG_LOCK"] = str(tmp / "node.lock")
        over = overhead(args.cells, tmp)
        leg = derived_leg(tmp)
    print(
        f"runner overhead: {over['overhead_per_cell_s'] * 1000:.0f} ms per cell "
        f"({over['cells']} cells: {over['matrix_cells_s']:.2f} s in cells vs "
        f"{over['bare_s']:.2f} s bare; once per matrix: {over['setup_once_s']:.2f} s) "
        f"[target < 300 ms]"
    )
    print(
        f"derived pin leg from a warm uv cache: {leg['derived_leg_s']:.2f} s "
        f"(naive venv + pip, warm pip cache: {leg['naive_venv_pip_s']:.2f} s) [target < 3 s]"
    )
    print(json.dumps({**over, **leg}, indent=2))


if __name__ == "__main__":
    main()
