"""A small transformer decode loop in torch: the workload the profile diff is tried on.

One variable tells two legs apart: ``--mode eager`` launches every kernel of a decode
step from Python; ``--mode graph`` captures one step in a CUDA graph and replays it.
Both run the same static-shape computation (attention over the whole KV cache with a
mask), so the kernels are the same and only launch overhead differs. ``--attn sdpa``
swaps the hand-written attention (einsum, softmax, einsum) for torch's fused
``scaled_dot_product_attention``: a second single-variable pair, where kernels differ.

Under vllmdiag's torch launcher (``vllmdiag/probes/torch_launch.py``) the launcher calls
``vllmdiag_setup`` and ``vllmdiag_step``; run directly it times a few steps itself.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F


def options(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="decode_loop")
    p.add_argument("--mode", choices=("eager", "graph"), default="eager")
    p.add_argument("--attn", choices=("manual", "sdpa"), default="manual")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--max-len", type=int, default=512)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--steps", type=int, default=50)
    return p.parse_args(argv)


class Layer(torch.nn.Module):
    def __init__(self, hidden: int, heads: int, attn: str) -> None:
        super().__init__()
        self.heads = heads
        self.attn = attn
        self.norm1 = torch.nn.RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = torch.nn.Linear(hidden, hidden, bias=False)
        self.norm2 = torch.nn.RMSNorm(hidden)
        self.up = torch.nn.Linear(hidden, 8 * hidden // 3 * 2, bias=False)
        self.down = torch.nn.Linear(8 * hidden // 3, hidden, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        k_cache: torch.Tensor,
        v_cache: torch.Tensor,
        pos: torch.Tensor,
        mask: torch.Tensor,
    ) -> torch.Tensor:
        b, h = x.shape
        d = h // self.heads
        q, k, v = self.qkv(self.norm1(x)).view(b, 3, self.heads, d).unbind(1)
        # write this step's K/V at the current position (a device tensor: graph-safe)
        k_cache.index_copy_(2, pos, k.unsqueeze(2))
        v_cache.index_copy_(2, pos, v.unsqueeze(2))
        if self.attn == "sdpa":  # one fused kernel where torch has one for these shapes
            attn = F.scaled_dot_product_attention(
                q.unsqueeze(2), k_cache, v_cache, attn_mask=~mask.unsqueeze(2)
            ).reshape(b, h)
        else:
            scores = torch.einsum("bhd,bhtd->bht", q, k_cache) / math.sqrt(d)
            probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
            attn = torch.einsum("bht,bhtd->bhd", probs, v_cache).reshape(b, h)
        x = x + self.out(attn)
        gate, up = self.up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Model(torch.nn.Module):
    def __init__(self, o: argparse.Namespace) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(o.vocab, o.hidden)
        self.layers = torch.nn.ModuleList(Layer(o.hidden, o.heads, o.attn) for _ in range(o.layers))
        self.norm = torch.nn.RMSNorm(o.hidden)
        self.head = torch.nn.Linear(o.hidden, o.vocab, bias=False)


@dataclass
class State:
    o: argparse.Namespace
    model: Model
    tokens: torch.Tensor
    pos: torch.Tensor
    mask: torch.Tensor
    caches: list[tuple[torch.Tensor, torch.Tensor]]
    graph: Any = None
    step_no: int = 0


def decode_step(s: State) -> None:
    """One token for every sequence; updates tokens, mask and KV caches in place."""
    x = s.model.embed(s.tokens)
    for layer, (kc, vc) in zip(s.model.layers, s.caches, strict=True):
        x = layer(x, kc, vc, s.pos, s.mask)
    logits = s.model.head(s.model.norm(x))
    s.tokens.copy_(torch.argmax(logits, dim=-1))


def advance(s: State) -> None:
    """Move to the next position (host side: outside the graph), wrapping at max-len."""
    s.step_no += 1
    p = s.step_no % s.o.max_len
    s.pos.fill_(p)
    if p == 0:
        s.mask.fill_(True)
    s.mask[..., p] = False


def vllmdiag_setup(argv: list[str]) -> State:
    o = options(argv)
    torch.manual_seed(0)
    dev = torch.device(o.device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    model = Model(o).to(dev, dtype).eval()
    d = o.hidden // o.heads
    caches = [
        (
            torch.zeros(o.batch, o.heads, o.max_len, d, device=dev, dtype=dtype),
            torch.zeros(o.batch, o.heads, o.max_len, d, device=dev, dtype=dtype),
        )
        for _ in range(o.layers)
    ]
    mask = torch.ones(o.batch, o.heads, o.max_len, dtype=torch.bool, device=dev)
    mask[..., 0] = False
    s = State(
        o=o,
        model=model,
        tokens=torch.randint(0, o.vocab, (o.batch,), device=dev),
        pos=torch.zeros(1, dtype=torch.long, device=dev),
        mask=mask,
        caches=caches,
    )
    torch.set_grad_enabled(False)
    if o.mode == "graph":
        if dev.type != "cuda":
            raise SystemExit("--mode graph needs a CUDA device")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm the allocator and cuBLAS handles before capture
                decode_step(s)
        torch.cuda.current_stream().wait_stream(side)
        s.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(s.graph):
            decode_step(s)
    return s


def vllmdiag_step(s: State, i: int) -> int:
    if s.graph is not None:
        s.graph.replay()
    else:
        decode_step(s)
    advance(s)
    return int(s.o.batch)


def main(argv: list[str] | None = None) -> None:
    import sys

    args = sys.argv[1:] if argv is None else argv
    s = vllmdiag_setup(args)
    for i in range(5):
        vllmdiag_step(s, i)
    if s.o.device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(s.o.steps):
        vllmdiag_step(s, i)
    if s.o.device == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(
        f"mode={s.o.mode} steps={s.o.steps} wall={dt * 1e3:.2f} ms "
        f"per_step={dt / s.o.steps * 1e6:.1f} us"
    )


if __name__ == "__main__":
    main()
