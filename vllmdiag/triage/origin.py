"""Which project a failure belongs to, from the frame that raised it.

The innermost frame of the original exception that is not in the standard library
decides: a path inside vLLM (installed, or a source checkout) is ``vllm``; inside
vllmdiag (a probe, a launcher) is ``tool``, the tool's own error and never a verdict;
inside another installed package is ``dependency`` (the package is recorded:
``transformers``, ``torch``, ``cutlass``); any other file (a workload's script) is
``user``; no frame in view is ``unknown``. An exception raised inside vLLM code that a
user script called is ``vllm``: the frame that raised decides, not the caller.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, Protocol

Origin = Literal["tool", "vllm", "dependency", "user", "unknown"]
ORIGINS: tuple[Origin, ...] = ("tool", "vllm", "dependency", "user", "unknown")

TOOL_PACKAGE = "vllmdiag"
_SITE = re.compile(r"(?:^|/)(?:site|dist)-packages/(?P<rest>.+)$", re.IGNORECASE)
_STDLIB = re.compile(r"(?:^|/)lib(?:64)?/python\d(?:\.\d+)?t?/|(?:^|/)Lib/")


class _HasFile(Protocol):
    @property
    def file(self) -> str: ...


def classify(path: str) -> tuple[Origin | None, str | None]:
    """(origin, package) of one frame's file; (None, None) for the standard library."""
    p = path.replace("\\", "/")
    if p.startswith("<"):
        return (None, None) if p.startswith("<frozen") else ("user", None)
    site = _SITE.search(p)
    if site:
        parts = [x for x in site["rest"].split("/") if x and not x.endswith((".egg", ".whl"))]
        if not parts:
            return "unknown", None
        top = re.split(r"[.-]", parts[0], maxsplit=1)[0] if len(parts) == 1 else parts[0]
        return _named(top)
    if _STDLIB.search(p):
        return None, None
    parts = [x for x in p.split("/") if x]
    dirs = parts[:-1]
    if TOOL_PACKAGE in dirs:
        return "tool", TOOL_PACKAGE
    for i, part in enumerate(dirs):
        if part == "vllm" and i + 1 < len(dirs):  # a checkout: .../vllm/vllm/engine/x.py
            return "vllm", "vllm"
    if p.endswith(".pyx") and not p.startswith("/") and len(parts) > 1:
        return "dependency", parts[0]  # a compiled package's frame: uvloop/loop.pyx
    return "user", None


def _named(top: str) -> tuple[Origin, str]:
    if top == "vllm":
        return "vllm", "vllm"
    if top == TOOL_PACKAGE:
        return "tool", TOOL_PACKAGE
    return "dependency", top


def origin_of(frames: Sequence[_HasFile]) -> tuple[Origin, str | None]:
    """Origin and package of the innermost meaningful frame (frames innermost last)."""
    for frame in reversed(frames):
        origin, package = classify(frame.file)
        if origin is not None:
            return origin, package
    return "unknown", None
