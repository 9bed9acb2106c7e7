"""``triage`` on a large log against the naive way, in one run.

Generates a realistic vLLM log (coloured process tags, logger prefixes, interleaved
workers, a harmless usage-stats traceback near the start, warnings logged with a stack,
the real failure in one worker near the end, the parent's wrappers last), then:

- vllmdiag: ``triage_file`` (streaming), in a child pinned to one core;
- naive: read the whole file, strip colours, run the exception regex over all of it and
  take the first hit (what a harness grepping for tracebacks does), in a child too.

Each child reports its wall time and peak RSS. Targets: 1 GB in under 30 s on one core,
peak memory under 200 MB.

    python benchmarks/bench_triage.py [--size-mb 1024] [--keep PATH] [--skip-naive]
        [--warn-every N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from vllmdiag import proc

C, R = "\x1b[1;36m", "\x1b[0;0m"
SP = "/opt/venvs/vllm-0.18.0/lib/python3.12/site-packages"


def _tag(name: str, pid: int) -> str:
    return f"{C}({name} pid={pid}){R} "


def _filler(n: int) -> list[str]:
    out = []
    for i in range(n):
        w = i % 4
        out.append(
            _tag(f"Worker_TP{w}", 5300 + w)
            + f"DEBUG 09-22 21:{i % 60:02d}:{i % 57:02d} [shm_broadcast.py:466] No available "
            f"shared memory broadcast block found in {60 + i % 17} seconds."
        )
        out.append(
            _tag("EngineCore_DP0", 5120)
            + f"INFO 09-22 21:{i % 60:02d}:{i % 53:02d} [loggers.py:123] Engine 000: Avg "
            f"prompt throughput: {i % 997}.0 tokens/s, Avg generation throughput: "
            f"{1800 + i % 300}.2 tokens/s, Running: {i % 256} reqs, Waiting: 0 reqs, "
            f"GPU KV cache usage: {i % 100}.{i % 10}%, Prefix cache hit rate: 0.0%"
        )
    return out


def _tb(prefix: str, frames: list[str], exc: str) -> list[str]:
    lines = [prefix + "Traceback (most recent call last):"]
    for f in frames:
        lines += [prefix + f'  File "{SP}/{f}", line 42, in fn', prefix + "    call()"]
    return [*lines, prefix + exc]


def generate(path: Path, size_mb: int, warn_every: int = 64) -> None:
    usage = [
        "Exception in thread Thread-3 (_report_usage_worker):",
        *_tb(
            "",
            ["vllm/usage/usage_lib.py", "cpuinfo/cpuinfo.py"],
            "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        ),
    ]
    warn = _tb(
        _tag("EngineCore_DP0", 5120) + "WARNING 09-22 21:00:00 [utils.py:1] ",
        ["vllm/config/model.py"],
        "UserWarning: deprecated field",
    )
    real = _tb(
        _tag("Worker_TP1", 5301) + "ERROR 09-22 22:15:41 [multiproc_executor.py:671] ",
        ["vllm/v1/worker/gpu_worker.py", "vllm/vllm_flash_attn/cute/utils.py"],
        "AttributeError: module 'cutlass.cute.core' has no attribute 'ThrMma'",
    )
    wrap = _tb(
        "",
        ["vllm/v1/engine/utils.py"],
        "RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {'EngineCore_DP0': 1}",
    )
    block = ("\n".join(_filler(12_000)) + "\n").encode()
    target = size_mb * 1024 * 1024
    with open(path, "wb") as fh:
        fh.write(("\n".join(usage) + "\n").encode())
        written, n = 0, 0
        while written < target:
            fh.write(block)
            written += len(block)
            n += 1
            if n % warn_every == 0:
                fh.write(("\n".join(warn) + "\n").encode())
        fh.write(("\n".join(real + wrap) + "\n").encode())


VLLMDIAG = """
import json, os, resource, sys, time
from pathlib import Path
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from vllmdiag.triage import triage_file
t0 = time.perf_counter()
t = triage_file(Path(sys.argv[1]))
dt = time.perf_counter() - t0
rc = t.root_cause
print(json.dumps({"s": dt, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
  "answer": f"{rc.type}: {rc.message} [{rc.process}]" if rc else None, "lines": t.lines,
  "tracebacks": t.tracebacks}))
"""

NAIVE = r"""
import json, os, re, resource, sys, time
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
t0 = time.perf_counter()
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
text = re.sub(r"\x1b\[[0-9;]*m", "", text)
exc = re.compile(r"^(?:\(\S+ pid=\d+\) )?(?:[A-Z]+ \S+ \S+ \[\S+\] )?"
                 r"([\w.]+(?:Error|Exception)): (.*)$", re.M)
hits = exc.findall(text)
tbs = text.count("Traceback (most recent call last)")
dt = time.perf_counter() - t0
print(json.dumps({"s": dt, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
  "answer": ": ".join(hits[0]) if hits else None, "lines": text.count("\n"),
  "tracebacks": tbs}))
"""


def child(code: str, log: Path) -> dict[str, object]:
    done = proc.run([sys.executable, "-c", code, str(log)], capture=True, timeout=3600)
    if not done.ok:
        sys.exit(f"child failed (rc {done.rc}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--keep", type=Path, help="write the log here and keep it")
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument(
        "--warn-every",
        type=int,
        default=64,
        help="a warning logged with a stack every N blocks of ~4 MiB (1: dense)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = args.keep or Path(tmp) / "big.log"
        generate(log, args.size_mb, args.warn_every)
        size = log.stat().st_size / 2**20
        print(f"log: {size:,.0f} MiB")
        ours = child(VLLMDIAG, log)
        print(
            f"vllmdiag triage : {ours['s']:7.2f} s  peak {ours['peak_mib']:7.1f} MiB  "
            f"{size / float(ours['s']):6.0f} MiB/s  -> {ours['answer']}"
        )  # type: ignore[arg-type]
        if not args.skip_naive:
            naive = child(NAIVE, log)
            print(
                f"naive read+regex: {naive['s']:7.2f} s  peak {naive['peak_mib']:7.1f} MiB  "
                f"{size / float(naive['s']):6.0f} MiB/s  -> {naive['answer']}"
            )  # type: ignore[arg-type]
            print(
                f"ratio time vllmdiag/naive = {float(ours['s']) / float(naive['s']):.2f}, "  # type: ignore[arg-type]
                f"memory = {float(ours['peak_mib']) / float(naive['peak_mib']):.3f}"
            )  # type: ignore[arg-type]
        print(
            json.dumps(
                {"size_mib": size, "vllmdiag": ours, "naive": None if args.skip_naive else naive}
            )
        )


if __name__ == "__main__":
    main()
