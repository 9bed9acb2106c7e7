"""``vllmdiag window`` against the naive loop, in one run.

The naive way (what the seeds did by hand): for every version, a fresh ``python -m venv``,
``pip install PKG==V``, import, ``hasattr``. vllmdiag: ``window --no-cache`` (search,
parallel probes, uv's download cache), ``window --no-cache --hint`` (probes chosen from the
wheels' sources), then the same question again (stored results).

Targets: window --no-cache <= 1/5 of the naive loop, with both boundary versions probed;
the repeat answers in under a second. Both runs go through the real CLI as a user runs it.

    python benchmarks/bench_window.py [--package nvidia-cutlass-dsl]
        [--symbol cutlass.cute.core.ThrMma] [--jobs 4] [--skip-naive-after N]

vllmdiag's own cache goes to a temporary directory; uv's download cache is the user's
(warmed first with one untimed ``--scan`` unless ``--no-warm``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from vllmdiag import proc
from vllmdiag.window import index
from vllmdiag.window.versions import candidates

CLI = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()"]


def window(args: argparse.Namespace, env: dict[str, str], *extra: str) -> tuple[float, dict]:  # type: ignore[type-arg]
    argv = [
        *CLI,
        "window",
        args.package,
        "--symbol",
        args.symbol,
        "--jobs",
        str(args.jobs),
        "--json",
        *extra,
    ]
    done = proc.run(argv, env=env, capture=True, timeout=3600)
    if not done.ok:
        sys.exit(f"window failed (rc {done.rc}):\n{done.stderr[-3000:]}")
    return done.elapsed_s, json.loads(done.stdout)


def naive_one(package: str, version: str, symbol: str, work: Path) -> tuple[float, str]:
    start = time.monotonic()
    venv = work / f"naive-{version}"
    env = proc.clean_environ()
    proc.check_output([sys.executable, "-m", "venv", str(venv)], env=env, what="venv")
    py = str(venv / "bin" / "python")
    pip = proc.run(
        [py, "-m", "pip", "install", "-q", f"{package}=={version}"],
        env=env,
        capture=True,
        timeout=3600,
    )
    module, _, attr = symbol.rpartition(".")
    if not pip.ok:
        verdict = "install-failed"
    else:
        code = (
            f"import importlib; m = importlib.import_module({module!r}); "
            f"print(hasattr(m, {attr!r}))"
        )
        out = proc.run([py, "-c", code], env=env, capture=True, timeout=600)
        verdict = {"True": "present", "False": "absent"}.get(out.stdout.strip(), "error")
    shutil.rmtree(venv, ignore_errors=True)
    return time.monotonic() - start, verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="nvidia-cutlass-dsl")
    ap.add_argument("--symbol", default="cutlass.cute.core.ThrMma")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--no-warm", action="store_true")
    ap.add_argument(
        "--skip-naive-after",
        type=int,
        default=0,
        help="time only the first N naive versions and extrapolate (0: all)",
    )
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-window-"))
    env = dict(os.environ, VLLMDIAG_CACHE=str(tmp / "cache"))
    figures: dict[str, object] = {"package": args.package, "symbol": args.symbol}
    try:
        if not args.no_warm:
            warm_s, _ = window(args, env, "--scan", "--no-cache")
            figures["warm_scan_s"] = round(warm_s, 1)
            shutil.rmtree(tmp / "cache", ignore_errors=True)

        cold_s, cold = window(args, env, "--no-cache")
        probed = [v["version"] for v in cold["versions"] if v["probed"]]
        figures.update(
            window_no_cache_s=round(cold_s, 2),
            window=cold["window"],
            versions=len(cold["versions"]),
            probes=len(probed),
        )
        hint_s, hinted = window(args, env, "--no-cache", "--hint")
        figures.update(
            window_hint_no_cache_s=round(hint_s, 2),
            hint_probes=sum(v["probed"] for v in hinted["versions"]),
            hint_same=hinted["window"] == cold["window"],
        )
        hot_s, hot = window(args, env)
        figures.update(window_stored_s=round(hot_s, 2), stored_same=hot["window"] == cold["window"])

        # Both boundary versions must have been import-probed, not inferred.
        rows = cold["versions"]
        edges = [
            (a["version"], b["version"])
            for a, b in itertools.pairwise(rows)
            if (a["status"] == "present") != (b["status"] == "present")
        ]
        by_version = {r["version"]: r for r in rows}
        figures["boundaries"] = [f"{a}|{b}" for a, b in edges]
        figures["boundaries_probed"] = all(
            by_version[a]["probed"] and by_version[b]["probed"] for a, b in edges
        )

        versions = [
            str(c.version)
            for c in candidates(
                index.project(args.package).files,
                python=f"{sys.version_info[0]}.{sys.version_info[1]}",
            )
        ]
        limit = args.skip_naive_after or len(versions)
        naive_total = 0.0
        naive: dict[str, str] = {}
        for v in versions[:limit]:
            took, verdict = naive_one(args.package, v, args.symbol, tmp)
            naive_total += took
            naive[v] = verdict
            print(f"naive {v}: {verdict} {took:.1f}s", file=sys.stderr, flush=True)
        measured = naive_total
        if limit < len(versions):
            naive_total = naive_total / limit * len(versions)
            figures["naive_extrapolated_from"] = limit
        figures.update(
            naive_s=round(naive_total, 1),
            naive_measured_s=round(measured, 1),
            naive_versions=len(versions),
        )
        agree = all(by_version[v]["status"] == s for v, s in naive.items() if v in by_version)
        figures["naive_agrees"] = agree
        figures["ratio_window_to_naive"] = round(cold_s / naive_total, 3)
        figures["target_ratio_met"] = cold_s <= naive_total / 5 and bool(
            figures["boundaries_probed"]
        )
        figures["target_repeat_met"] = hot_s < 1.0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
