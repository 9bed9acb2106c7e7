"""Legs of the decode loop on one GPU, each pair differing in one variable.

``eager`` vs ``graph``: kernel launches from Python vs CUDA-graph replay. ``eager`` vs
``sdpa``: hand-written attention vs torch's fused attention.

Run on the GPU machine from the repository root (needs torch, nothing else):

    python benchmarks/h200_decode_legs.py OUTDIR

For each leg it runs ``examples/decode_loop.py`` under vllmdiag's torch launcher twice:
once unprofiled with many steps (the wall clock to explain) and once profiled with a
short window (the trace, small enough to keep as a test fixture). It prints a table and
writes ``OUTDIR/<leg>/{trace.json.gz,meta.json}`` plus ``OUTDIR/timing.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vllmdiag.probes import script  # noqa: E402
from vllmdiag.services import proc  # noqa: E402

MODEL = ["--layers", "4", "--hidden", "1024", "--heads", "16", "--batch", "8",
         "--max-len", "512", "--vocab", "32000"]  # fmt: skip
LEGS = {
    "eager": ["--mode", "eager"],
    "graph": ["--mode", "graph"],
    "sdpa": ["--mode", "eager", "--attn", "sdpa"],
}
TIMED_STEPS = 400
PROFILED_STEPS = 40
WARMUP = 20


def launch(out: Path, leg: str, steps: int, profile: bool) -> dict[str, object]:
    argv = [sys.executable, str(script("torch_launch")), "--script",
            str(REPO / "examples" / "decode_loop.py"), "--out", str(out),
            "--warmup", str(WARMUP), "--steps", str(steps), "--label", leg]  # fmt: skip
    if not profile:
        argv.append("--no-profile")
    argv += ["--", *LEGS[leg], *MODEL]
    log = out.parent / f"{out.name}.log"
    done = proc.run(argv, env=proc.clean_environ(), timeout=300, log=log)
    if not done.ok:
        print(log.read_text()[-3000:])
        raise SystemExit(f"{leg}: launcher exited {done.rc}")
    meta: dict[str, object] = json.loads((out / "meta.json").read_text())
    return meta


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = {}
    for leg in LEGS:
        timed = launch(out / f"{leg}-timed", leg, TIMED_STEPS, profile=False)
        prof = launch(out / leg, leg, PROFILED_STEPS, profile=True)
        rows[leg] = {
            "device": timed["device"],
            "timed_steps": TIMED_STEPS,
            "timed_wall_s": timed["wall_s"],
            "timed_us_per_step": float(timed["wall_s"]) / TIMED_STEPS * 1e6,  # type: ignore[arg-type]
            "profiled_steps": PROFILED_STEPS,
            "window_unprofiled_wall_s": prof["wall_s"],
            "window_profiled_wall_s": prof["wall_s_profiled"],
        }
    (out / "timing.json").write_text(json.dumps(rows, indent=2))
    print(f"{'leg':<6} {'us/step (400, no profiler)':>28} {'40-step window ms':>18} "
          f"{'same, profiled ms':>18}")  # fmt: skip
    for leg, r in rows.items():
        print(
            f"{leg:<6} {r['timed_us_per_step']:>28.1f} "
            f"{float(r['window_unprofiled_wall_s']) * 1e3:>18.3f} "  # type: ignore[arg-type]
            f"{float(r['window_profiled_wall_s']) * 1e3:>18.3f}"
        )  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
