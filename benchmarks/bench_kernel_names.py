"""``profile diff`` of two traces of N distinct C++ kernel names, and the kernel-name
parser against the naive per-character one, in one run.

    python benchmarks/bench_kernel_names.py [--names 200000]

Each trace holds N kernels whose demangled signatures differ in one template argument
(the shape of Triton's and CUTLASS's autotuned instances), as Kineto writes them. The
whole diff runs in a fresh child (wall time and peak RSS). The name parser is measured
per distinct name (no cache) against the naive one that walks every character in Python
(each '<' scanning back over its identifier), on a Kineto-length name and a long CUTLASS
one. (The previous release, which also looked each event's family up again and cached
65,536 names, took 294 s for 200,000 names on the same machine.)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vllmdiag.services import proc  # noqa: E402

SIGNATURE = (
    "void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, "
    "unsigned int, 2, 2, {i}>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
    "at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
    "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, long)"
)


def write_trace(path: Path, n: int) -> None:
    with path.open("w") as f:
        f.write('{"traceEvents": [\n')
        for i in range(n):
            args = {"device": 0, "correlation": i}
            ev = {"ph": "X", "cat": "kernel", "name": SIGNATURE.format(i=i),
                  "ts": 10.0 + 5 * i, "dur": 2.0, "pid": 0, "tid": 7, "args": args}  # fmt: skip
            f.write(("," if i else "") + json.dumps(ev) + "\n")
        f.write("]}\n")


CHILD = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from vllmdiag.jobs.profile import diff_command as job
start = time.monotonic()
job.diff_inputs(Path({a!r}), Path({b!r}), out=Path({out!r}), top=15, runs_root=Path({out!r}))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"s": time.monotonic() - start, "peak_mb": peak / 1024}}))
"""


def naive_depths(text: str) -> list[int]:
    """The naive parser's bracket depths: every character visited in Python, each '<'
    scanning back over its identifier."""
    from vllmdiag.readers.traces import cxxnames

    depth: list[int] = []
    stack: list[str] = []
    guarded = cxxnames._guarded(text)
    for i, ch in enumerate(text):
        if i in guarded:
            depth.append(len(stack) + 1)
            continue
        depth.append(len(stack))
        if ch in cxxnames._OPENERS:
            stack.append(ch)
        elif ch in cxxnames._CLOSERS:
            want = cxxnames._CLOSERS[ch]
            while stack and stack[-1] != want:
                stack.pop()
            if stack:
                stack.pop()
        elif ch == "<":
            j = i
            while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
                j -= 1
            if j < i and not text[j].isdigit():
                stack.append("<")
        elif ch == ">" and stack and stack[-1] == "<" and text[i - 1 : i] != "-":
            stack.pop()
    return depth


LONG = (
    "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_relu_bf16_" + "x" * 2000
    + "_{i}<int, 8>>(Params<" + ", ".join(f"T{k}" for k in range(300)) + ">)"
)  # fmt: skip


def parse_us(template: str, naive: bool, n: int = 2000) -> float:
    """Microseconds to parse one distinct name (no cache), linear or naive."""
    from vllmdiag.readers.traces import cxxnames

    linear = cxxnames._depths
    cxxnames._depths = naive_depths if naive else linear
    try:
        parse = cxxnames.function_name.__wrapped__
        start = time.perf_counter()
        for i in range(n):
            parse(template.replace("{i}", str(i)))
        return (time.perf_counter() - start) / n * 1e6
    finally:
        cxxnames._depths = linear


def measure(tmp: Path, n: int) -> dict[str, float]:
    a, b = tmp / f"a{n}.json", tmp / f"b{n}.json"
    write_trace(a, n)
    write_trace(b, n)
    code = CHILD.format(repo=str(REPO), a=str(a), b=str(b), out=str(tmp / "out"))
    done = proc.run([sys.executable, "-c", code], capture=True, timeout=3600)
    if not done.ok:
        raise SystemExit(done.stderr[-2000:])
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--names", type=int, default=200_000)
    args = ap.parse_args()
    for label, template in (("a 330-character", SIGNATURE), (f"a {len(LONG):,}-character", LONG)):
        fast, slow = parse_us(template, naive=False), parse_us(template, naive=True)
        print(f"parse {label} name: {fast:.0f} us (naive per-character parser: {slow:.0f} us)")
    with tempfile.TemporaryDirectory() as d:
        big = measure(Path(d), args.names)
    print(f"profile diff of two traces of {args.names:,} distinct names: {big['s']:.1f} s, "
          f"{big['peak_mb']:.0f} MB peak")  # fmt: skip


if __name__ == "__main__":
    main()
