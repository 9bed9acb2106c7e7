"""The GPUs of this node, from ``nvidia-smi`` when it exists."""

from __future__ import annotations

import shutil
from functools import lru_cache

from vllmdiag.model.stack import Gpu, NodeGpus
from vllmdiag.services import proc


@lru_cache(maxsize=1)
def gpu_info() -> NodeGpus:
    """The node's GPUs; none where there is no ``nvidia-smi``."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return NodeGpus()
    done = proc.run(
        [smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader,nounits"],
        capture=True,
        timeout=30,
    )
    if not done.ok:
        return NodeGpus(error=(done.stderr or done.stdout).strip()[-500:])
    gpus = []
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3:
            gpus.append(Gpu(name=parts[0], driver=parts[1], memory_mib=parts[2]))
    return NodeGpus(tuple(gpus))
