"""A leg's runtime stack and the node's GPUs: what a "vLLM version comparison" really
compares ("a comparison of three whole runtime stacks", as the B200/H200 ablation this
project grew out of found). Pure values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

#: The distributions a stack names, as the stack probe reports them (dist name → field).
DISTRIBUTIONS = {
    "vllm": "vllm",
    "torch": "torch",
    "transformers": "transformers",
    "flashinfer-python": "flashinfer_python",
    "nvidia-cutlass-dsl": "nvidia_cutlass_dsl",
    "triton": "triton",
}


@dataclass(frozen=True)
class StackInfo:
    """Versions of the packages that decide what vLLM does; None where not installed."""

    vllm: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None
    transformers: str | None = None
    flashinfer_python: str | None = None
    nvidia_cutlass_dsl: str | None = None
    triton: str | None = None
    python: str | None = None
    implementation: str | None = None
    platform: str | None = None

    @classmethod
    def from_probe(cls, data: Mapping[str, Any]) -> StackInfo:
        """From ``probes/stack.py``'s JSON (distribution names as keys); unknown keys and
        values that are not strings are dropped."""
        names = {f.name for f in fields(cls)}
        values: dict[str, str] = {}
        for key, value in data.items():
            name = DISTRIBUTIONS.get(key, key)
            if name in names and isinstance(value, str):
                values[name] = value
        return cls(**values)

    def versions(self) -> dict[str, str]:
        """Distribution name → version, for what is installed."""
        out = {}
        for dist, name in DISTRIBUTIONS.items():
            value = getattr(self, name)
            if value is not None:
                out[dist] = value
        return out


@dataclass(frozen=True)
class Gpu:
    name: str
    driver: str
    memory_mib: str


@dataclass(frozen=True)
class NodeGpus:
    """The node's GPUs from ``nvidia-smi`` (none where there is none); ``error`` when it
    ran and failed."""

    gpus: tuple[Gpu, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class EnvRecord:
    """What one leg was when it ran: its spec, where it lives, what was installed (``uv
    pip freeze`` and its hash), its runtime stack and the node's GPUs."""

    leg: str
    key: str
    path: str
    python: str
    requirements: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    exclude_newer: str | None = None
    lock_hash: str = ""
    stack: StackInfo = StackInfo()
    gpu: NodeGpus = NodeGpus()
    freeze: tuple[str, ...] = ()
    reused: bool = False
    build_s: float = 0.0


_LOCAL_CUDA = re.compile(r"\+cu(?P<digits>\d{3,})\b")
_RUNTIME = re.compile(r"^nvidia-cuda-runtime(?:-cu\d+)?$")


def cuda_build(
    torch: str | None, torch_cuda: str | None, freeze: Mapping[str, str] | None = None
) -> str:
    """The CUDA torch was built with: as the stack probe recorded it, else from torch's
    local version (``2.11.0+cu130`` → ``13.0``), else from the CUDA runtime wheel torch
    pulled in (``nvidia-cuda-runtime 13.0.96`` → ``13.0 (from nvidia-cuda-runtime)``);
    ``None`` only when none of them says (a CPU build)."""
    if torch_cuda:
        return torch_cuda
    if not torch:
        return "N/A"
    m = _LOCAL_CUDA.search(torch)
    if m:
        digits = m["digits"]
        return f"{digits[:-1]}.{digits[-1]}"
    for name, version in sorted((freeze or {}).items()):
        if _RUNTIME.match(name):
            major_minor = ".".join(version.split(".")[:2])
            return f"{major_minor} (from {name} {version})"
    return "None"
