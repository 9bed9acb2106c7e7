"""A CPU stand-in for vLLM 0.18 starting an engine whose attention path is the CuTe wrapper.

vLLM 0.18's ``vllm/vllm_flash_attn/cute/utils.py`` carries ``thr_mma: cute.core.ThrMma``
in a function signature, evaluated when the module is imported. This script does the
same, the way vLLM does it: the engine core is a child process whose output carries the
``(EngineCore_DP0 pid=N)`` prefix, and the parent only raises the wrapper
``Engine core initialization failed. See root cause above.`` It takes the engine flags
the arms use (``--enforce-eager``, ``--gpu-memory-utilization``) so that flag arms are
real, and ``--path`` picks which import site is exercised.
"""

# No "from __future__ import annotations": the annotations below must be evaluated.
import argparse
import multiprocessing as mp
import os
import sys
import traceback


def wrapper_module() -> None:
    """utils.py: the signature is evaluated at import (no postponed annotations)."""
    import cutlass.cute as cute

    def make_acc_fragment(smem: cute.Tensor, thr_mma: cute.core.ThrMma, swap_ab: bool = False):
        return smem, thr_mma, swap_ab

    print(f"prepared {make_acc_fragment.__name__}", flush=True)


def kernel_class() -> None:
    """A kernel class whose attribute annotation is evaluated when the class is built."""
    import cutlass.cute as cute

    class FlashAttentionForwardSm100:
        thr_mma: cute.core.ThrMma

    print(f"prepared {FlashAttentionForwardSm100.__name__}", flush=True)


class _Prefixed:
    def __init__(self, stream, prefix: str) -> None:
        self.stream, self.prefix, self.at_start = stream, prefix, True

    def write(self, text: str) -> int:
        for piece in text.splitlines(keepends=True):
            if self.at_start:
                self.stream.write(self.prefix)
            self.stream.write(piece)
            self.at_start = piece.endswith("\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def engine_core(path: str) -> None:
    prefix = f"(EngineCore_DP0 pid={os.getpid()}) "
    sys.stdout = _Prefixed(sys.__stdout__, prefix)
    sys.stderr = _Prefixed(sys.__stderr__, prefix)
    try:
        print("Initializing the engine core", flush=True)
        (wrapper_module if path == "utils" else kernel_class)()
        print("Engine core ready", flush=True)
    except BaseException:
        print("ERROR EngineCore failed to start.", file=sys.stderr, flush=True)
        traceback.print_exc()
        sys.stderr.flush()
        raise SystemExit(1) from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", choices=["utils", "kernel"], default="utils")
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    args = parser.parse_args()
    print(
        f"enforce_eager={args.enforce_eager} gpu_memory_utilization="
        f"{args.gpu_memory_utilization} OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}",
        flush=True,
    )
    ctx = mp.get_context("spawn")
    core = ctx.Process(target=engine_core, args=(args.path,), name="EngineCore_DP0")
    core.start()
    core.join()
    if core.exitcode != 0:
        raise RuntimeError(
            "Engine core initialization failed. See root cause above. "
            f"Failed core proc(s): {{'EngineCore_DP0': {core.exitcode}}}"
        )
    print("generated 8 tokens", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
