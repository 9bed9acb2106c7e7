"""A study at the seeds' scale: what the study job adds per cell, and what regenerating
every table from the results costs.

    python benchmarks/bench_study.py [--models 15] [--batches 3]

The study: 3 legs (``path:`` legs to this interpreter) × N models × 4 workloads (two
throughput, two latency, each a ``python -c`` that writes its metric's JSON), one
repeat: 180 cells per batch at the seeds' 15 models. Each batch runs the whole study
again (a re-measurement), so the last regeneration selects among ``batches`` runs of
every slot.

1. Overhead per cell: the cells' time in the journal (``cell_started`` to
   ``cell_finished``) against running the same commands with plain ``subprocess.run``
   in a loop, as the seeds' driver scripts did.
2. Regeneration: ``vllmdiag.jobs.study.regenerate`` (read every batch, select the canonical
   runs, write REPORT.md, CANONICAL.md, MANIFEST.md and the TSVs) against the naive
   floor: ``json.load`` of every ``result.json`` and nothing else.

Nothing is written to the user's cache: everything lives in a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

WRITE = "import json, sys; json.dump(dict({key}=1.0), open(sys.argv[1] + '/{file}', 'w'))"


def recipe(tmp: Path, models: int) -> Path:
    legs = "".join(f'  "{v}": {{path: {sys.executable}}}\n' for v in ("0.18", "0.26", "0.29"))
    names = "".join(f"  m{i:02d}: {{model: org/model-{i:02d}, tp: 1}}\n" for i in range(models))
    tput = WRITE.format(key="tokens_per_second", file="throughput.json")
    lat = WRITE.format(key="avg_latency", file="latency.json")
    workloads = ""
    for name, code, metric in (
        ("mixed", tput, "throughput"),
        ("long-context", tput, "throughput"),
        ("single-request", lat, "latency"),
        ("fixed-batch-32", lat, "latency"),
    ):
        command = json.dumps(["{python}", "-c", code, "{out_dir}", "{flags}"])
        workloads += f"  {name}: {{command: {command}, output_len: 128, metrics: [{metric}]}}\n"
    path = tmp / "study.yaml"
    path.write_text(
        "name: bench\nquestion: seeds scale\n"
        f"legs:\n{legs}harness: {{env: {{VLLM_NO_USAGE_STATS: '1'}}}}\n"
        f"models:\n{names}workloads:\n{workloads}"
        "metrics:\n"
        "  throughput: {json: throughput.json, key: tokens_per_second, unit: tok/s}\n"
        "  latency: {json: latency.json, key: avg_latency, better: lower, unit: ms/tok,\n"
        "            scale: 1000, per_token: true}\n"
    )
    return path


def cells_seconds(run_dir: Path) -> tuple[float, list[list[str]]]:
    events = [json.loads(x) for x in (run_dir / "run.jsonl").read_text().splitlines()]
    starts = {e["id"]: e for e in events if e["event"] == "cell_started"}
    ends = {e["id"]: e["ts"] for e in events if e["event"] == "cell_finished"}
    total = sum(
        (datetime.fromisoformat(ends[k]) - datetime.fromisoformat(e["ts"])).total_seconds()
        for k, e in starts.items()
    )
    return total, [e["argv"] for e in starts.values()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=15)
    parser.add_argument("--batches", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-study-") as d:
        tmp = Path(d)
        os.environ["VLLMDIAG_CACHE"] = str(tmp / "cache")
        os.environ["VLLMDIAG_LOCK"] = str(tmp / "node.lock")
        from vllmdiag.jobs.study import StudyOptions, load_study, regenerate, run_study

        study = load_study(recipe(tmp, args.models))
        out = tmp / "study"
        per_cell, totals = [], []
        for _ in range(args.batches):
            t0 = time.perf_counter()
            report = run_study(study, StudyOptions(out=out))
            totals.append(time.perf_counter() - t0)
            in_cells, argvs = cells_seconds(report.batch_dir)
            t0 = time.perf_counter()
            for argv in argvs:
                subprocess.run(argv, check=True)
            bare = time.perf_counter() - t0
            per_cell.append((in_cells - bare) / len(argvs))
        cells = len(argvs)
        regen = []
        for _ in range(3):
            t0 = time.perf_counter()
            done = regenerate(out)
            regen.append(time.perf_counter() - t0)
        files = sorted(out.glob("batches/*/cells/*/result.json"))
        t0 = time.perf_counter()
        for f in files:
            json.loads(f.read_text())
        naive = time.perf_counter() - t0
        canonical = sum(c.canonical is not None for c in done.tables.selection.choices)
    result = {
        "cells_per_batch": cells,
        "batches": args.batches,
        "batch_total_s": totals,
        "overhead_per_cell_s": per_cell,
        "results": len(files),
        "canonical_slots": canonical,
        "regenerate_s": regen,
        "naive_json_load_s": naive,
    }
    print(
        f"study overhead per cell: {statistics.median(per_cell) * 1000:.0f} ms "
        f"(median of {args.batches} batches of {cells} cells; whole batches "
        f"{', '.join(f'{t:.1f}' for t in totals)} s) [target < 300 ms]"
    )
    print(
        f"regenerate every table from {len(files)} results ({canonical} slots): "
        f"{statistics.median(regen):.2f} s median of 3 (naive json.load of every "
        f"result.json alone: {naive:.2f} s) [target < 5 s]"
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
