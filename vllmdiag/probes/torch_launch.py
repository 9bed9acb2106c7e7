"""Run a Python workload under ``torch.profiler`` (CPU + CUDA) and write its Kineto trace.

Run by a leg's own python; needs torch there, nothing else (vllmdiag is not imported).

    python torch_launch.py --script WORK.py --out DIR [--warmup N] [--steps M]
                           [--no-profile] [--label NAME] [-- SCRIPT ARGS...]

A workload that defines ``vllmdiag_setup(argv) -> state`` and ``vllmdiag_step(state, i)``
(returning the number of tokens it produced, or None) is driven in three phases, each in
an NVTX range and a ``record_function`` range: ``vllmdiag:setup``, ``vllmdiag:warmup``
(N steps, not recorded) and ``vllmdiag:measured`` (M steps, one ``vllmdiag:step#i``
range each). The measured steps run twice: once unprofiled (the wall clock to compare)
and once under the profiler. Any other script runs whole as ``__main__`` inside the
``vllmdiag:measured`` range.

Writes ``DIR/trace.json.gz`` (the Kineto trace) and ``DIR/meta.json`` (phases, wall
clock, token counts, versions). Exit 0 only when both were written.
"""

import argparse
import contextlib
import gzip
import json
import os
import runpy
import shutil
import sys
import tempfile
import time

SCHEMA = 1


def parse(argv):
    p = argparse.ArgumentParser(prog="torch_launch")
    p.add_argument("--script", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--label", default="")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--with-stack", action="store_true")
    if "--" in argv:
        cut = argv.index("--")
        ns = p.parse_args(argv[:cut])
        ns.script_args = argv[cut + 1 :]
    else:
        ns = p.parse_args(argv)
        ns.script_args = []
    return ns


class Phases:
    """NVTX + record_function ranges; NVTX only where CUDA (and its NVTX) is usable."""

    def __init__(self, torch):
        self.torch = torch
        self.cuda = bool(torch.cuda.is_available())
        self.nvtx = None
        if self.cuda:
            try:
                torch.cuda.nvtx.range_push("vllmdiag:probe")
                torch.cuda.nvtx.range_pop()
                self.nvtx = torch.cuda.nvtx
            except Exception:  # NVTX missing from this build: ranges stay CPU-side
                self.nvtx = None

    @contextlib.contextmanager
    def range(self, name):
        if self.nvtx is not None:
            self.nvtx.range_push(name)
        try:
            with self.torch.profiler.record_function(name):
                yield
        finally:
            if self.nvtx is not None:
                self.nvtx.range_pop()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()


def run_steps(phases, step, state, first, count, per_step):
    tokens = 0
    known = True
    for i in range(first, first + count):
        t0 = time.perf_counter()
        with phases.range(f"vllmdiag:step#{i}"):
            produced = step(state, i)
        if per_step is not None:
            phases.sync()
            per_step.append(time.perf_counter() - t0)
        if isinstance(produced, int) and not isinstance(produced, bool):
            tokens += produced
        else:
            known = False
    return tokens if known else None


def main(argv):
    ns = parse(argv)
    os.makedirs(ns.out, exist_ok=True)
    import torch
    from torch.profiler import ProfilerActivity, profile

    phases = Phases(torch)
    meta = {
        "schema": SCHEMA,
        "label": ns.label,
        "script": os.path.abspath(ns.script),
        "script_args": ns.script_args,
        "torch": torch.__version__,
        "cuda": phases.cuda,
        "device": torch.cuda.get_device_name(0) if phases.cuda else "cpu",
        "nvtx": phases.nvtx is not None,
        "pid": os.getpid(),
    }
    activities = [ProfilerActivity.CPU]
    if phases.cuda:
        activities.append(ProfilerActivity.CUDA)
    sys.argv = [ns.script, *ns.script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(ns.script)))

    t_setup = time.perf_counter()
    with phases.range("vllmdiag:setup"):
        module = runpy.run_path(ns.script, run_name="vllmdiag_workload")
    setup = module.get("vllmdiag_setup")
    step = module.get("vllmdiag_step")
    driven = callable(setup) and callable(step)
    prof = profile(activities=activities, with_stack=ns.with_stack, record_shapes=False)
    if driven and setup is not None and step is not None:
        with phases.range("vllmdiag:setup"):
            state = setup(list(ns.script_args))
            phases.sync()
        meta["setup_s"] = time.perf_counter() - t_setup
        with phases.range("vllmdiag:warmup"):
            run_steps(phases, step, state, 0, ns.warmup, None)
            phases.sync()
        per_step: list[float] = []
        t0 = time.perf_counter()
        with phases.range("vllmdiag:measured"):
            tokens = run_steps(phases, step, state, ns.warmup, ns.steps, per_step)
        phases.sync()
        meta["wall_s"] = time.perf_counter() - t0
        meta["step_s"] = per_step
        meta.update(mode="steps", warmup=ns.warmup, steps=ns.steps, tokens=tokens)
        if not ns.no_profile:
            with prof:  # started before the clock: CUPTI's start-up is not the workload's
                phases.sync()
                t0 = time.perf_counter()
                with phases.range("vllmdiag:measured"):
                    run_steps(phases, step, state, ns.warmup, ns.steps, None)
                    phases.sync()
                meta["wall_s_profiled"] = time.perf_counter() - t0
    else:
        meta.update(mode="script", warmup=0, steps=None, tokens=None)
        sys.argv = [ns.script, *ns.script_args]
        t0 = time.perf_counter()
        if ns.no_profile:
            with phases.range("vllmdiag:measured"):
                runpy.run_path(ns.script, run_name="__main__")
        else:
            with prof, phases.range("vllmdiag:measured"):
                runpy.run_path(ns.script, run_name="__main__")
                phases.sync()
        meta["wall_s"] = time.perf_counter() - t0

    if not ns.no_profile:
        trace = os.path.join(ns.out, "trace.json.gz")
        with tempfile.TemporaryDirectory(dir=ns.out) as tmp:
            raw = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(raw)
            part = trace + ".part"
            with open(raw, "rb") as src, gzip.open(part, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(part, trace)
        meta["trace"] = "trace.json.gz"
    part = os.path.join(ns.out, "meta.json.part")
    with open(part, "w") as f:
        json.dump(meta, f, indent=2)
    os.replace(part, os.path.join(ns.out, "meta.json"))
    print(json.dumps({"ok": True, "out": ns.out, "wall_s": meta["wall_s"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
