"""``triage`` on large logs against the naive way, in one run.

Three generated logs, realistic vLLM output (coloured process tags, logger prefixes,
interleaved workers):

- ``end``: a harmless usage-stats traceback near the start, warnings logged with a stack
  every ~256 MiB, the real failure in one worker near the end, the parent's wrapper last;
- ``middle``: one rank dies without an exception (``Worker proc VllmWorker-2 died
  unexpectedly``) in the middle of healthy ranks' noise, the noise goes on after it;
- ``chain``: one exception chain of a million links (``During handling of the above
  exception ...``), the original exception first.

Each is triaged by vllmdiag (``triage_file``, streaming) and by the naive way (read the
whole file, strip colours, run the exception regex over it, take the first hit: what a
harness grepping for tracebacks does), each in a child pinned to one core that reports
its wall time and peak RSS (VmHWM). Targets: 1 GiB in under 30 s on one core, peak
memory under 200 MB.

    python benchmarks/bench_triage.py [--case end middle chain] [--size-mb 1024]
        [--links 1000000] [--keep DIR] [--skip-naive] [--warn-every N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vllmdiag.services import proc

C, R = "\x1b[1;36m", "\x1b[0;0m"
SP = "/opt/venvs/vllm-0.18.0/lib/python3.12/site-packages"
BLOCK_LINES = 12_000


def _tag(name: str, pid: int) -> str:
    return f"{C}({name} pid={pid}){R} "


def _filler(n: int) -> bytes:
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
    return ("\n".join(out) + "\n").encode()


def _tb(prefix: str, frames: list[str], exc: str) -> list[str]:
    lines = [prefix + "Traceback (most recent call last):"]
    for f in frames:
        lines += [prefix + f'  File "{SP}/{f}", line 42, in fn', prefix + "    call()"]
    return [*lines, prefix + exc]


def _text(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


USAGE = _text(
    [
        "Exception in thread Thread-3 (_report_usage_worker):",
        *_tb(
            "",
            ["vllm/usage/usage_lib.py", "cpuinfo/cpuinfo.py"],
            "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        ),
    ]
)


def gen_end(path: Path, size_mb: int, warn_every: int = 64) -> str:
    warn = _text(
        _tb(
            _tag("EngineCore_DP0", 5120) + "WARNING 09-22 21:00:00 [utils.py:1] ",
            ["vllm/config/model.py"],
            "UserWarning: deprecated field",
        )
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
    block = _filler(BLOCK_LINES)
    with open(path, "wb") as fh:
        fh.write(USAGE)
        written, n = 0, 0
        while written < size_mb << 20:
            fh.write(block)
            written, n = written + len(block), n + 1
            if n % warn_every == 0:
                fh.write(warn)
        fh.write(_text(real + wrap))
    return (
        "AttributeError: module 'cutlass.cute.core' has no attribute 'ThrMma' [Worker_TP1 pid=5301]"
    )


def gen_middle(path: Path, size_mb: int, warn_every: int = 64) -> str:
    death = _text(
        [
            _tag("EngineCore_DP0", 5120) + "ERROR 09-22 21:30:00 [multiproc_executor.py:154] "
            "Worker proc VllmWorker-2 died unexpectedly, shutting down executor."
        ]
    )
    block = _filler(BLOCK_LINES)
    total = size_mb << 20
    with open(path, "wb") as fh:
        fh.write(USAGE)
        written, dead = 0, False
        while written < total:
            fh.write(block)
            written += len(block)
            if not dead and written >= total // 2:
                fh.write(death)
                dead = True
    return ": Worker proc VllmWorker-2 died unexpectedly, shutting down executor. [VllmWorker-2]"


def gen_chain(path: Path, links: int) -> str:
    one = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/handler.py", line {i}, in handle\n'
        "    step()\n"
        "ValueError: link {i} failed\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
    )
    with open(path, "w") as fh:
        for i in range(links):
            fh.write(one.format(i=i))
        fh.write('Traceback (most recent call last):\n  File "/srv/app/main.py", line 1, in m\n')
        fh.write("RuntimeError: the last one\n")
    return "ValueError: link 0 failed [main]"


PRELUDE = """
import json, os, re, sys, time
from pathlib import Path
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
def peak_mib():
    status = open('/proc/self/status').read()
    return int(re.search(r'VmHWM:\\s+(\\d+)', status).group(1)) / 1024
"""

VLLMDIAG = (
    PRELUDE
    + """
from vllmdiag.readers.triage import triage_file
t0 = time.perf_counter()
t = triage_file(Path(sys.argv[1]))
dt = time.perf_counter() - t0
rc = t.root_cause
print(json.dumps({"s": dt, "peak_mib": peak_mib(),
  "answer": f"{rc.type}: {rc.message} [{rc.process}]" if rc else None, "lines": t.lines}))
"""
)

NAIVE = (
    PRELUDE
    + r"""
t0 = time.perf_counter()
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
text = re.sub(r"\x1b\[[0-9;]*m", "", text)
exc = re.compile(r"^(?:\(\S+ pid=\d+\) )?(?:[A-Z]+ \S+ \S+ \[\S+\] )?"
                 r"([\w.]+(?:Error|Exception)): (.*)$", re.M)
hits = exc.findall(text)
dt = time.perf_counter() - t0
print(json.dumps({"s": dt, "peak_mib": peak_mib(),
  "answer": ": ".join(hits[0]) if hits else None, "lines": text.count("\n")}))
"""
)


def child(code: str, log: Path) -> dict[str, Any]:
    done = proc.run([sys.executable, "-c", code, str(log)], capture=True, timeout=3600)
    if not done.ok:
        sys.exit(f"child failed (rc {done.rc}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def run_case(
    name: str, make: Callable[[Path], str], tmp: Path, skip_naive: bool, keep: bool
) -> dict[str, Any]:
    log = tmp / f"{name}.log"
    expected = make(log)
    size = log.stat().st_size / 2**20
    ours = child(VLLMDIAG, log)
    ours["right"] = ours["answer"] is not None and ours["answer"].endswith(expected)
    print(f"[{name}] log: {size:,.0f} MiB, {ours['lines']:,} lines")
    print(
        f"  vllmdiag triage : {ours['s']:7.2f} s  peak {ours['peak_mib']:7.1f} MiB  "
        f"{size / ours['s']:6.0f} MiB/s  {'right' if ours['right'] else 'WRONG'}: "
        f"{str(ours['answer'])[:110]}"
    )
    naive = None
    if not skip_naive:
        naive = child(NAIVE, log)
        naive["right"] = naive["answer"] is not None and naive["answer"] in expected
        print(
            f"  naive read+regex: {naive['s']:7.2f} s  peak {naive['peak_mib']:7.1f} MiB  "
            f"{size / naive['s']:6.0f} MiB/s  {'right' if naive['right'] else 'wrong'}: "
            f"{str(naive['answer'])[:110]}"
        )
        print(
            f"  ratio vllmdiag/naive: time {ours['s'] / naive['s']:.2f}, "
            f"memory {ours['peak_mib'] / naive['peak_mib']:.3f}"
        )
    if not ours["right"]:
        print(f"  expected: {expected}")
    if not keep:
        log.unlink()
    return {"case": name, "size_mib": size, "vllmdiag": ours, "naive": naive}


def main(args: argparse.Namespace) -> None:
    results = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = args.keep or Path(tmpdir)
        tmp.mkdir(parents=True, exist_ok=True)
        makers: dict[str, Callable[[Path], str]] = {
            "end": lambda p: gen_end(p, args.size_mb, args.warn_every),
            "middle": lambda p: gen_middle(p, args.size_mb),
            "chain": lambda p: gen_chain(p, args.links),
        }
        for name in args.case:
            results.append(
                run_case(name, makers[name], tmp, args.skip_naive, args.keep is not None)
            )
    print(json.dumps(results))
    if not all(r["vllmdiag"]["right"] for r in results):
        sys.exit("vllmdiag named the wrong root cause")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--case", nargs="+", choices=("end", "middle", "chain"), default=["end", "middle", "chain"]
    )
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--links", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, help="write the logs into this directory and keep them")
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument(
        "--warn-every",
        type=int,
        default=64,
        help="end case: a warning logged with a stack every N blocks of ~4 MiB (1: dense)",
    )
    main(ap.parse_args())
