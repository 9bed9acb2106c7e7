"""What the hardening costs, and what it saves, each against the naive way in one run.

    python benchmarks/bench_hardening.py [--no-env]

1. Dry run of a recipe whose question and command hold a 1 MB scalar: the whole
   ``vllmdiag matrix --dry-run`` in a subprocess, against the naive way of printing the
   plan's header (a Rich ``console.print`` of a markup string, highlighter on), which is
   quadratic in the scalar: measured at 10k, 20k and 40k characters and extrapolated to
   1 MB with the fitted exponent (measuring it at 1 MB would take hours).
2. Redaction of 1 MB of text built to trip regexes (``a.a.a...``): :func:`redact.text`
   against the naive URL-credential pattern (an unbounded scheme tried at every
   position), likewise measured on small inputs and extrapolated.
3. Reusing a cached env: ``EnvCache.ensure`` with the RECORD check of every requirement
   against the naive reuse (marker + ``import sys`` health check), for a small leg
   (``packaging``) and one whose code is in its dependencies (``nvidia-cutlass-dsl``);
   and the check alone over every distribution of the python running the benchmark (a
   large environment, torch included where installed). Needs the package index once;
   ``--no-env`` skips it.
4. What keeps a leg's content whole: a build with ``uv pip install --link-mode copy``
   (what legs use: an edit of one leg reaches neither uv's cache nor another leg) against
   uv's default hardlinks, from a warm uv cache, best of 3; and the content check
   (RECORD's SHA-256 of every file) the first time, when every file is hashed, against
   later checks, when each file's unchanged identity spares the hashing. Skipped by
   ``--no-env`` too.

Nothing is written to the user's cache: everything lives in a temporary directory.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 1_000_000


def _fit(sizes: list[int], seconds: list[float]) -> tuple[float, float]:
    """Exponent of t ~ n^k from the two largest sizes, and the time extrapolated to 1 MB."""
    k = math.log(seconds[-1] / seconds[-2]) / math.log(sizes[-1] / sizes[-2])
    return k, seconds[-1] * (MB / sizes[-1]) ** k


def dry_run(tmp: Path) -> dict[str, object]:
    from rich.console import Console

    big = "x" * MB
    recipe = tmp / "big.yaml"
    recipe.write_text(
        f'name: big\nquestion: "{big}"\nlegs:\n  here: {{path: {sys.executable}}}\n'
        f'baseline: {{leg: here}}\nworkloads:\n  w: {{command: ["{{python}}", "-c", "{big}"]}}\n'
    )
    cmd = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()"]
    start = time.perf_counter()
    done = subprocess.run(
        [*cmd, "matrix", str(recipe), "--dry-run"], capture_output=True, env=_env(tmp)
    )
    ours = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-2000:]
    sizes, naive = [10_000, 20_000, 40_000], []
    for n in sizes:
        best = math.inf
        for _ in range(2):
            console = Console(file=io.StringIO(), soft_wrap=True, width=120)
            t0 = time.perf_counter()
            console.print(f"[bold]big[/]: {'x' * n}")
            best = min(best, time.perf_counter() - t0)
        naive.append(best)
    k, at_1mb = _fit(sizes, naive)
    return {
        "dry_run_1mb_s": round(ours, 2),
        "naive_header_s": dict(zip(map(str, sizes), (round(s, 3) for s in naive), strict=True)),
        "naive_exponent": round(k, 2),
        "naive_header_1mb_extrapolated_s": round(at_1mb),
    }


def redaction() -> dict[str, object]:
    from vllmdiag.services import redact

    text = "a." * (MB // 2)
    t0 = time.perf_counter()
    redact.text(text)
    ours = time.perf_counter() - t0
    naive_re = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@]+@")
    sizes, naive = [10_000, 20_000, 40_000], []
    for n in sizes:
        best = math.inf
        for _ in range(2):
            t0 = time.perf_counter()
            naive_re.sub("", text[:n])
            best = min(best, time.perf_counter() - t0)
        naive.append(best)
    k, at_1mb = _fit(sizes, naive)
    return {
        "redact_1mb_s": round(ours, 3),
        "naive_s": dict(zip(map(str, sizes), (round(s, 3) for s in naive), strict=True)),
        "naive_exponent": round(k, 2),
        "naive_1mb_extrapolated_s": round(at_1mb),
    }


def env_reuse(tmp: Path) -> dict[str, object]:
    from vllmdiag import probes
    from vllmdiag.services import proc
    from vllmdiag.services.envs import EnvCache, LegSpec
    from vllmdiag.services.envs.cache import _healthy
    from vllmdiag.services.envs.verify import read_marker

    cache = EnvCache(tmp / "cache")
    out: dict[str, object] = {}
    legs = {
        "packaging": LegSpec("small", ("packaging==24.2",)),
        "nvidia-cutlass-dsl": LegSpec(
            "large", ("nvidia-cutlass-dsl==4.5.3",), exclude_newer="2026-11-29"
        ),
    }
    for name, spec in legs.items():
        env = cache.ensure(spec)  # built once (from uv's cache when warm)
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            assert cache.ensure(spec).reused
            runs.append(time.perf_counter() - t0)
        naive = []
        for _ in range(5):  # the old reuse: marker read + python starts
            t0 = time.perf_counter()
            data, _ = read_marker(env.path / ".vllmdiag-env.json", schema=1, key=spec.key())
            assert data is not None and _healthy(env.python)
            naive.append(time.perf_counter() - t0)
        report = json.loads(
            proc.check_output([str(env.python), str(probes.script("installed")), name])
        )
        out[name] = {
            "dists_checked": report["checked_dists"],
            "files_checked": report["checked_files"],
            "reuse_checked_s": round(sorted(runs)[2], 3),
            "reuse_naive_s": round(sorted(naive)[2], 3),
        }
    # A large environment as it stands: every distribution of the python running this.
    from importlib import metadata

    names = sorted({d.metadata["Name"] for d in metadata.distributions()})
    t0 = time.perf_counter()
    report = json.loads(
        proc.check_output([sys.executable, str(probes.script("installed")), *names])
    )
    out["this python, every distribution"] = {
        "dists_checked": report["checked_dists"],
        "files_checked": report["checked_files"],
        "check_s": round(time.perf_counter() - t0, 3),
    }
    return out


def content(tmp: Path) -> dict[str, object]:
    from importlib import metadata

    from vllmdiag import probes
    from vllmdiag.services import proc
    from vllmdiag.services.envs.uvtool import uv

    out: dict[str, object] = {}
    legs = {
        "packaging": ["packaging==24.2"],
        "nvidia-cutlass-dsl": ["--exclude-newer", "2026-11-29", "nvidia-cutlass-dsl==4.5.3"],
    }
    for name, reqs in legs.items():
        times: dict[str, float] = {}
        for mode in ("hardlink", "copy", "hardlink", "copy", "hardlink", "copy"):
            venv = tmp / f"link-{name}-{mode}"
            uv("venv", "--quiet", "--clear", venv)
            t0 = time.perf_counter()
            uv("pip", "install", "--quiet", "--python", venv, "--link-mode", mode, *reqs)
            took = time.perf_counter() - t0
            times[mode] = min(times.get(mode, math.inf), took)
        venv = tmp / f"link-{name}-copy"
        verified = tmp / f"verified-{name}.json"
        python = next((venv / "bin").glob("python"))
        check = ["--verified", str(verified)]
        checks = []
        for _ in range(3):
            t0 = time.perf_counter()
            report = json.loads(
                proc.check_output([str(python), str(probes.script("installed")), *check, name])
            )
            checks.append((time.perf_counter() - t0, report))
        out[name] = {
            "install_hardlink_s": round(times["hardlink"], 3),
            "install_copy_s": round(times["copy"], 3),
            "files": checks[0][1]["checked_files"],
            "hashed_mb": round(checks[0][1]["hashed_bytes"] / MB, 1),
            "first_check_s": round(checks[0][0], 3),
            "later_check_s": round(min(c[0] for c in checks[1:]), 3),
            "later_hashed_files": checks[-1][1]["hashed_files"],
        }
    names = sorted({d.metadata["Name"] for d in metadata.distributions()})
    verified = tmp / "verified-this.json"
    runs = []
    for _ in range(2):
        t0 = time.perf_counter()
        report = json.loads(
            proc.check_output(
                [
                    sys.executable,
                    str(probes.script("installed")),
                    "--verified",
                    str(verified),
                    *names,
                ]
            )
        )
        runs.append((time.perf_counter() - t0, report))
    out["this python, every distribution"] = {
        "files": runs[0][1]["checked_files"],
        "hashed_mb": round(runs[0][1]["hashed_bytes"] / MB, 1),
        "first_check_s": round(runs[0][0], 3),
        "later_check_s": round(runs[1][0], 3),
    }
    return out


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "VLLMDIAG_CACHE": str(tmp / "cache"), "VLLMDIAG_LOCK": str(tmp / "l")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-env", action="store_true", help="skip the env reuse figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ.update(_env(tmp))
        results: dict[str, object] = {"dry_run": dry_run(tmp), "redaction": redaction()}
        if not args.no_env:
            results["env_reuse"] = env_reuse(tmp)
            results["content"] = content(tmp)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
