"""Eager vs ``torch.compile`` of one residual + RMSNorm + SwiGLU stack, on one GPU.

The pair vLLM users meet when they set ``--enforce-eager``: the same arithmetic run as
separate eager kernels (``aten::add``, ``aten::_fused_rms_norm``, ``aten::silu``, ...) or
as Inductor's fused Triton kernels (``triton_per_fused_..._rms_norm_add_...``), launched
one by one (``compiled``) or replayed from CUDA graphs (``compiled-graph``,
``mode="reduce-overhead"``). The kernels differ in name, so the diff has to pair them by
the operator that launched them.

Run on the GPU machine from the repository root (needs torch and Triton, nothing else):

    python benchmarks/h200_compile_legs.py OUTDIR

For each leg it runs this file as the workload of vllmdiag's torch launcher (warm-up
steps compile, then the measured steps run once unprofiled and once profiled) and writes
``OUTDIR/<leg>/{trace.json.gz,meta.json}`` and ``OUTDIR/timing.json``. The same file
defines the workload (``vllmdiag_setup`` / ``vllmdiag_step``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MODES = ("eager", "compiled", "compiled-graph")
WARMUP = 6
STEPS = 12


def _options(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="compile-legs workload")
    p.add_argument("--mode", choices=MODES, default="eager")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--tokens", type=int, default=8)
    return p.parse_args(argv)


def vllmdiag_setup(argv: list[str]) -> Any:
    import torch
    import torch.nn.functional as F

    o = _options(argv)
    torch.manual_seed(0)
    torch.set_grad_enabled(False)
    dev, dt, h = torch.device("cuda"), torch.bfloat16, o.hidden
    layers = [
        (
            torch.ones(h, device=dev, dtype=dt),
            torch.randn(h, 4 * h, device=dev, dtype=dt) / h**0.5,
            torch.randn(2 * h, h, device=dev, dtype=dt) / h**0.5,
        )
        for _ in range(o.layers)
    ]

    def forward(x: Any, residual: Any) -> tuple[Any, Any]:
        for norm_w, up, down in layers:
            residual = x + residual
            y = F.rms_norm(residual, (h,), norm_w, 1e-6)
            gate, val = (y @ up).chunk(2, dim=-1)
            x = (F.silu(gate) * val) @ down
        return x, residual

    if o.mode == "compiled":
        forward = torch.compile(forward, fullgraph=True)
    elif o.mode == "compiled-graph":
        forward = torch.compile(forward, fullgraph=True, mode="reduce-overhead")
    x = torch.randn(o.tokens, h, device=dev, dtype=dt)
    return {"forward": forward, "x": x, "r": torch.zeros_like(x), "tokens": o.tokens}


def vllmdiag_step(state: Any, i: int) -> int:
    out, _ = state["forward"](state["x"], state["r"])
    state["x"].copy_(out * 0.5)
    return int(state["tokens"])


def main() -> None:
    repo = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(repo))
    from vllmdiag.jobs.profile.capture_executor import Workload, capture

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    timing = {}
    for mode in MODES:
        w = Workload(script=Path(__file__).resolve(), script_args=("--mode", mode),
                     warmup=WARMUP, steps=STEPS)  # fmt: skip
        res = capture(mode, Path(sys.executable), w, out / mode, "torch", timeout=500)
        print(f"{mode:15} ok={res.ok} {res.elapsed_s:6.1f}s {res.reason or ''}"[:400])
        if res.ok:
            meta = json.loads((res.out / "meta.json").read_text())
            timing[mode] = {k: meta.get(k) for k in ("wall_s", "wall_s_profiled")}
    (out / "timing.json").write_text(json.dumps(timing, indent=2) + "\n")
    print(json.dumps(timing, indent=2))


if __name__ == "__main__":
    main()
