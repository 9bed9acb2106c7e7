"""vllmdiag's own capture → diff → render path on a GPU machine with torch (and pydantic).

    python benchmarks/h200_profile_e2e.py WORKDIR OUTDIR

Captures ``examples/decode_loop.py`` eager and graph-replayed with the library
(:func:`vllmdiag.jobs.profile.capture_executor.capture`: torch launcher, nsys where one can write a
report, py-spy for the CPU side), diffs the two torch captures and writes the summary,
the picture, the JSON and the py-spy outputs to OUTDIR. Needs only pydantic and packaging
beside torch (no typer/rich/uv), so it runs where vllmdiag itself is not installed.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vllmdiag import codec  # noqa: E402
from vllmdiag.jobs.profile.capture_executor import Workload, capture  # noqa: E402
from vllmdiag.jobs.profile.diff import render  # noqa: E402
from vllmdiag.jobs.profile.diff import time_diff as diff  # noqa: E402
from vllmdiag.jobs.profile.diff.report import gpu_report  # noqa: E402
from vllmdiag.readers.traces import leg, pyspy  # noqa: E402

MODEL = ("--layers", "4", "--hidden", "1024", "--heads", "16", "--batch", "8",
         "--max-len", "512", "--vocab", "32000")  # fmt: skip
LEGS = {"eager": ("--mode", "eager"), "graph": ("--mode", "graph")}


def main() -> None:
    work, out = Path(sys.argv[1]), Path(sys.argv[2])
    py = Path(sys.executable)
    results = []
    for name, args in LEGS.items():
        w = Workload(script=REPO / "examples" / "decode_loop.py", script_args=(*args, *MODEL),
                     warmup=20, steps=40)  # fmt: skip
        for backend in ("torch", "nsys", "py-spy"):
            res = capture(name, py, w if backend != "py-spy" else _long(w), work / name, backend)
            results.append(codec.dump(res))
            print(
                f"{name:6} {backend:7} ok={res.ok} {res.elapsed_s:6.1f}s {res.reason or ''}"[:300]
            )
    a, b = leg.load(work / "eager" / "torch", "eager"), leg.load(work / "graph" / "torch", "graph")
    frames: tuple[pyspy.FrameRow, ...] = ()
    spa, spb = (
        work / "eager" / "pyspy" / "profile.pyspy.txt",
        work / "graph" / "pyspy" / "profile.pyspy.txt",
    )
    if spa.exists() and spb.exists():
        frames = pyspy.diff(pyspy.read(spa), pyspy.read(spb))
        shutil.copy(spa, out / "eager.pyspy.txt")
        shutil.copy(spb, out / "graph.pyspy.txt")
    d = diff.diff(a, b)
    files = render.write(d, out, frames)
    report = codec.dump(gpu_report(d, frames, files))
    (out / "diff.json").write_text(json.dumps({**report, "captures": results}, indent=1))
    print(d.reconciliation)
    for f in frames[:8]:
        print(f"  {f.delta * 100:+6.1f} pt  {f.frame[:100]}")
    print("wrote", ", ".join(p.name for p in files.values()))


def _long(w: Workload) -> Workload:
    """py-spy samples the CPU side: more steps, no profiler."""
    return Workload(script=w.script, script_args=w.script_args, warmup=w.warmup, steps=400)


if __name__ == "__main__":
    main()
