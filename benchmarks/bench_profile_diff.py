"""Diff of two ~1 GB Kineto traces on one core, against ``json.load`` of the same events.

    python benchmarks/bench_profile_diff.py [--size-mb 1024] [--naive-mb 256] [--dir DIR]

Builds the traces by replicating the events of the real H200 captures in
``tests/fixtures/traces/h200`` (eager → A, sdpa → B), each replica shifted in time and in
correlation id so the timeline stays consistent. Each measurement runs in a fresh child
pinned to one core; peak memory is the child's ``ru_maxrss``. ``json.load`` of a full
1 GB trace needs several GB, so the naive way is measured on a smaller replica of the
same events and scaled (the figures say so).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vllmdiag.services import proc  # noqa: E402

H200 = REPO / "tests" / "fixtures" / "traces" / "h200"


def replicate(src: Path, dest: Path, size_mb: float) -> int:
    """Write ``dest``: ``src``'s events repeated until the file is ``size_mb`` MB."""
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    events = doc.pop("traceEvents")
    xs = [e for e in events if e.get("ph") == "X"]
    span = max(e["ts"] + e.get("dur", 0) for e in xs) - min(e["ts"] for e in xs) + 1000.0
    corr_step = 1 + max(int((e.get("args") or {}).get("correlation", 0)) for e in events)
    target = int(size_mb * 1024 * 1024)
    written = 0
    n = 0
    with open(dest, "w") as out:
        head = json.dumps(doc)[:-1]
        out.write(head + ', "traceEvents": [\n')
        written += len(head)
        first = True
        rep = 0
        while written < target:
            shift, dc = rep * span, rep * corr_step
            for e in events:
                if e.get("ph") == "M" and rep:
                    continue
                e2 = dict(e)
                if "ts" in e2:
                    e2["ts"] = round(float(e2["ts"]) + shift, 3)
                args = e2.get("args")
                if args and "correlation" in args:
                    e2["args"] = {**args, "correlation": int(args["correlation"]) + dc}
                line = json.dumps(e2)
                out.write(line if first else ",\n" + line)
                first = False
                written += len(line) + 2
                n += 1
            rep += 1
        out.write('\n], "traceName": "replica"}\n')
    return n


def child(mode: str, paths: list[str]) -> None:
    """Measured in a fresh process on one core: prints one JSON line."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "diff":
        from vllmdiag.jobs.profile.diff import time_diff as diff
        from vllmdiag.readers.traces import leg

        d = diff.diff(leg.load(Path(paths[0]), "A"), leg.load(Path(paths[1]), "B"))
        extra = {"kernels": [d.a.kernel_count, d.b.kernel_count], "delta_us": d.delta_us,
                 "attributed": [_attributed(d.a), _attributed(d.b)]}  # fmt: skip
    elif mode == "stream":
        from vllmdiag.readers.traces import kineto

        extra = {"kernels": kineto.read(Path(paths[0])).kernel_count}
    else:
        with open(paths[0]) as f:
            doc = json.load(f)
        extra = {"events": len(doc["traceEvents"])}
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"mode": mode, "wall_s": wall, "cpu_s": cpu, "peak_mb": peak_mb, **extra}))


def _attributed(leg: object) -> float:
    """Share of a side's GPU time whose launching op the join found."""
    from vllmdiag.readers.traces import ops

    kernels = leg.kernels.values()  # type: ignore[attr-defined]
    total = sum(k.total_us for k in kernels) or 1.0
    named = sum(us for k in kernels for op, _, us in k.ops if op not in (ops.NO_OP, ops.GRAPH))
    return named / total


def measure(mode: str, *paths: Path) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", mode, *map(str, paths)]
    out = proc.check_output(argv, timeout=3600, what=f"{mode} child")
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=float, default=1024)
    ap.add_argument("--naive-mb", type=float, default=256)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--child", nargs="+", default=None)
    ns = ap.parse_args()
    if ns.child:
        child(ns.child[0], ns.child[1:])
        return
    with tempfile.TemporaryDirectory(dir=ns.dir) as tmp:
        work = Path(tmp)
        a, b, small = work / "a.json", work / "b.json", work / "small.json"
        t0 = time.perf_counter()
        na = replicate(H200 / "eager" / "trace.json.gz", a, ns.size_mb)
        nb = replicate(H200 / "sdpa" / "trace.json.gz", b, ns.size_mb)
        replicate(H200 / "eager" / "trace.json.gz", small, ns.naive_mb)
        print(f"generated in {time.perf_counter() - t0:.0f}s: A {a.stat().st_size / 2**20:.0f} MB "
              f"({na} events), B {b.stat().st_size / 2**20:.0f} MB ({nb} events)")  # fmt: skip
        d = measure("diff", a, b)
        s = measure("stream", small)
        j = measure("json", small)
        scale = a.stat().st_size / small.stat().st_size
    print()
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| what | input | wall s (1 core) | CPU s | peak RSS MB |")
    print("|---|---|---:|---:|---:|")
    print(f"| `profile diff` (streaming), two traces | 2 × {ns.size_mb:.0f} MB | "
          f"{d['wall_s']:.1f} | {d['cpu_s']:.1f} | {d['peak_mb']:.0f} |")  # fmt: skip
    print(f"| streaming read, one trace | {ns.naive_mb:.0f} MB | {s['wall_s']:.1f} | "
          f"{s['cpu_s']:.1f} | {s['peak_mb']:.0f} |")  # fmt: skip
    print(f"| `json.load`, one trace | {ns.naive_mb:.0f} MB | {j['wall_s']:.1f} | "
          f"{j['cpu_s']:.1f} | {j['peak_mb']:.0f} |")  # fmt: skip
    est_s, est_mb = j["cpu_s"] * scale, j["peak_mb"] * scale
    print(f"| `json.load` scaled ×{scale:.1f} to one {ns.size_mb:.0f} MB trace (estimate) | "
          f"{ns.size_mb:.0f} MB | | ~{est_s:.0f} | ~{est_mb:.0f} |")  # fmt: skip
    print(f"\nkernels A/B: {d['kernels']}, GPU-time delta {d['delta_us'] / 1e3:.1f} ms, "
          f"GPU time attributed to a launching op A/B: {d['attributed']}")  # fmt: skip


if __name__ == "__main__":
    main()
