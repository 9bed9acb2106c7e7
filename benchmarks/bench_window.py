"""``vllmdiag window --no-cache`` against the naive loop, in one run.

The naive way: for every candidate version, a fresh ``uv venv``, ``uv pip install
PKG==V`` and an import that asks ``hasattr`` (uv's cache warm, as for vllmdiag). vllmdiag:
``window --no-cache`` (the wheels' sources read by range requests, then real installs and
imports of both sides of the change only), ``window --no-cache --no-static`` (the import
search alone), then the same question again (stored results).

Targets: ``window --no-cache`` at most 0.1 of the naive loop, both boundary versions
import-checked, every verdict equal to the naive loop's; the repeat under a second. Every
``window`` run goes through the CLI as a user runs it (``--json``).

    python benchmarks/bench_window.py [--package nvidia-cutlass-dsl]
        [--symbol cutlass.cute.core.ThrMma] [--jobs 4] [--repeats 3] [--no-warm]

vllmdiag's own cache goes to a temporary directory; uv's cache is the user's, warmed
first (untimed) by one ``window --scan --no-cache`` unless ``--no-warm``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vllmdiag.services import proc
from vllmdiag.services.envs.uvtool import uv_bin, uv_environ
from vllmdiag.services.pkgindex import candidates, project

CLI = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()"]


def window(args: argparse.Namespace, env: dict[str, str], *extra: str) -> tuple[float, Any]:
    argv = [*CLI, "window", args.package, "--symbol", args.symbol, "--jobs", str(args.jobs)]
    done = proc.run([*argv, "--json", *extra], env=env, capture=True, timeout=3600)
    if not done.ok:
        sys.exit(f"window failed (rc {done.rc}):\n{done.stderr[-3000:]}")
    return done.elapsed_s, json.loads(done.stdout)


def naive_one(package: str, version: str, symbol: str, work: Path) -> tuple[float, str]:
    """A fresh venv, an install, an import: what one would script by hand."""
    start = time.monotonic()
    venv = work / f"naive-{version}"
    uv = uv_bin()
    proc.check_output(
        [uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
        env=uv_environ(),
        what="uv venv",
    )
    py = str(venv / "bin" / "python")
    pip = proc.run(
        [uv, "pip", "install", "--quiet", "--python", py, f"{package}=={version}"],
        env=uv_environ(),
        capture=True,
        timeout=3600,
    )
    module, _, attr = symbol.rpartition(".")
    verdict = "install-failed"
    if pip.ok:
        code = f"import importlib; print(hasattr(importlib.import_module({module!r}), {attr!r}))"
        out = proc.run([py, "-c", code], env=proc.clean_environ(), capture=True, timeout=600)
        verdict = {"True": "present", "False": "absent"}.get(out.stdout.strip(), "error")
    shutil.rmtree(venv, ignore_errors=True)
    return time.monotonic() - start, verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--package", default="nvidia-cutlass-dsl")
    ap.add_argument("--symbol", default="cutlass.cute.core.ThrMma")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument(
        "--repeats", type=int, default=3, help="timed window --no-cache runs (naive loop split)"
    )
    ap.add_argument("--no-warm", action="store_true")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-window-"))
    env = dict(os.environ, VLLMDIAG_CACHE=str(tmp / "cache"))
    figures: dict[str, Any] = {"package": args.package, "symbol": args.symbol}
    figures["load_before"] = [round(x, 2) for x in os.getloadavg()]
    try:
        if not args.no_warm:
            warm_s, _ = window(args, env, "--scan", "--no-cache")
            figures["warm_scan_s"] = round(warm_s, 1)

        # Timed window runs interleaved with thirds of the naive loop, so that a change
        # in the machine's load falls on both sides alike.
        python = f"{sys.version_info[0]}.{sys.version_info[1]}"
        files = project(args.package).files
        versions = [str(c.version) for c in candidates(files, python=python)]
        chunks = [versions[i :: max(1, args.repeats)] for i in range(max(1, args.repeats))]
        runs: list[float] = []
        naive: dict[str, str] = {}
        naive_total = 0.0
        for chunk in chunks:
            shutil.rmtree(tmp / "cache", ignore_errors=True)
            took, cold = window(args, env, "--no-cache")
            runs.append(took)
            for v in chunk:
                spent, verdict = naive_one(args.package, v, args.symbol, tmp)
                naive_total += spent
                naive[v] = verdict
                print(f"naive {v}: {verdict} {spent:.1f}s", file=sys.stderr, flush=True)
        cold_s = statistics.median(runs)
        rows = cold["versions"]
        figures.update(
            window_no_cache_s=[round(r, 2) for r in runs],
            window_no_cache_median_s=round(cold_s, 2),
            static_read_s=cold["static_read"]["elapsed_s"],
            window=cold["window"],
            versions=len(rows),
            imported=cold["decided_by_import"],
            decided_statically=len(cold["decided_statically"]),
        )
        search_s, searched = window(args, env, "--no-cache", "--no-static")
        figures.update(
            window_no_static_s=round(search_s, 2),
            no_static_imports=len(searched["decided_by_import"]),
            no_static_same=searched["window"] == cold["window"],
        )
        hots = [window(args, env) for _ in range(3)]
        hot_s = statistics.median(t for t, _ in hots)
        figures.update(
            window_stored_s=[round(t, 2) for t, _ in hots],
            stored_same=all(h["window"] == cold["window"] for _, h in hots),
        )

        # Both sides of every change were imported, not read or inferred.
        by_version = {r["version"]: r for r in rows}
        edges = [
            (a["version"], b["version"])
            for a, b in itertools.pairwise(rows)
            if (a["status"] == "present") != (b["status"] == "present")
        ]
        figures["boundaries"] = [f"{a}|{b}" for a, b in edges]
        figures["boundaries_imported"] = all(
            by_version[v]["decided_by"] == "import" for edge in edges for v in edge
        )

        figures.update(naive_s=round(naive_total, 1), naive_versions=len(versions))
        figures["naive_agrees"] = all(by_version[v]["status"] == s for v, s in naive.items())
        figures["ratio_window_to_naive"] = round(cold_s / naive_total, 3)
        exact = figures["boundaries_imported"] and figures["naive_agrees"]
        figures["target_ratio_met"] = bool(cold_s <= naive_total * 0.1 and exact)
        figures["target_repeat_met"] = hot_s < 1.0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
