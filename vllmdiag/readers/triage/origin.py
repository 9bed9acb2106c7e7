"""Where one frame of a traceback lies: vLLM, vllmdiag itself, another package, or the
workload's own files (pure: paths are only compared, never read).

``tool`` is vllmdiag's own code only: a file inside the vllmdiag package that is running
(its real path, resolved, and the path it was imported from), inside an installed
``vllmdiag`` distribution (``site-packages/vllmdiag/``), or under a directory the caller
names as the tool's own (the run directory whose commands vllmdiag wrote). A folder that
happens to be called ``vllmdiag`` (a clone under git's default name, a recipe folder) is
no more the tool's than any other: its scripts are the workload's (``user``).

Whose fault a failure is, is decided from these and from what the error says, in
:mod:`vllmdiag.readers.triage.blame`; this module only says where a frame is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, Protocol

from vllmdiag.readers.triage.callers import FRAMEWORKS

#: Where a frame lies.
Place = Literal["tool", "vllm", "dependency", "user"]

TOOL_PACKAGE = "vllmdiag"
_SITE = re.compile(r"(?:^|/)(?:site|dist)-packages/(?P<rest>.+)$", re.IGNORECASE)
_DRIVE = re.compile(r"^[A-Za-z]:/")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
_ELIDED = re.compile(r"^(?:\.{3,}|…|\*+)$")
#: The package of a vLLM plugin (vllm_ascend, vllm_omni, vllm_gaudi, ...), as a folder.
_PLUGIN = re.compile(r"^vllm_[a-z]\w*$")
_STDLIB = re.compile(r"(?:^|/)lib(?:64)?/python\d(?:\.\d+)?t?/|(?:^|/)Lib/")


class _HasFile(Protocol):
    @property
    def file(self) -> str: ...


def running_tool_dirs() -> tuple[str, ...]:
    """The running vllmdiag package's directory: as imported and resolved."""
    here = Path(__file__).parents[2]  # vllmdiag/readers/triage/origin.py -> vllmdiag/
    dirs = {os.path.abspath(here).replace("\\", "/"), str(here.resolve()).replace("\\", "/")}
    return tuple(sorted(dirs))


_RUNNING = running_tool_dirs()


def _under(path: str, dirs: Iterable[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


#: A console script pip wrote (``...\\Scripts\\vllm.exe\\__main__.py``, ``.../bin/vllm``):
#: it only imports the package's entry point and calls it, as the standard library would.
#: In ``bin/`` only the known entry points are (a project's own ``bin/start-vllm`` is its
#: code).
_LAUNCHER = re.compile(
    r"/Scripts/[\w.-]+\.exe/__main__\.py$"
    r"|/bin/(?:vllm|ray|torchrun|accelerate|deepspeed|lm_eval|lighteval|trl|swift"
    r"|llamafactory-cli|huggingface-cli|hf)$"
)


#: Libraries vLLM uses that users build from a source checkout and install in place
#: (``pip install -e``), so that their frames lie outside site-packages: the checkout's
#: folder, then the package's (``/app/aiter/aiter/mla.py``).
_LIBRARY_CHECKOUTS = frozenset(
    {
        "aiter",
        "flashinfer",
        "xformers",
        "triton",
        "transformers",
        "deep_gemm",
        "deep_ep",
        "flash_attn",
        "lmcache",
        "nixl",
        "bitsandbytes",
    }
)


def classify(path: str, tool_dirs: Sequence[str] = ()) -> tuple[Place | None, str | None]:
    """(place, package) of one frame's file; (None, None) for the standard library.
    ``tool_dirs``: directories besides the running package whose files are the tool's
    (the run directory vllmdiag wrote)."""
    p = path.replace("\\", "/")
    if p.startswith("<"):
        return (None, None) if p.startswith("<frozen") else ("user", None)
    if _under(p, _RUNNING) or _under(p, (d.replace("\\", "/") for d in tool_dirs)):
        return "tool", TOOL_PACKAGE
    site = _SITE.search(p)
    if site:
        parts = [x for x in site["rest"].split("/") if x and not x.endswith((".egg", ".whl"))]
        if not parts:
            return None, None
        top = re.split(r"[.-]", parts[0], maxsplit=1)[0] if len(parts) == 1 else parts[0]
        return _named(top)
    if _STDLIB.search(p) or _LAUNCHER.search(p):
        return None, None
    parts = [x for x in p.split("/") if x]
    while len(parts) > 1 and _ELIDED.match(parts[0]):
        parts = parts[1:]  # a head the paste elided (``.../triton/jit.py``, ``***/x``)
        p = "/".join(parts)
    dirs = parts[:-1]
    for i, part in enumerate(dirs):
        framework_above = any(d.lower() in FRAMEWORKS for d in dirs[:i])
        if part == "vllm" and i + 1 < len(dirs) and not framework_above:
            # a checkout: .../vllm/vllm/engine/x.py (a copy of vLLM's code a framework
            # keeps in its own checkout, verl's third_party/vllm/, is the framework's)
            return "vllm", "vllm"
        if part in _LIBRARY_CHECKOUTS and dirs[i + 1 : i + 2] == [part] and not framework_above:
            # a source checkout of a library vLLM uses, installed in place: .../aiter/aiter/x.py
            return "dependency", part
        if _PLUGIN.match(part) and not framework_above:
            # a vLLM platform plugin's checkout: .../vllm_ascend/x.py (a folder of that
            # shape inside a framework's checkout, verl's vllm_rollout/, is the framework's)
            return "dependency", part
    relative = not p.startswith("/") and not _DRIVE.match(p)
    if relative and len(parts) > 1:
        # a path shortened to its package (a paste, a compiled frame): vllm/utils.py,
        # uvloop/loop.pyx, openrlhf/trainer/ray/vllm_engine.py
        if parts[0] == "vllm":
            return "vllm", "vllm"
        if _IDENT.match(parts[0]) and (p.endswith(".pyx") or len(dirs) >= 2):
            return "dependency", parts[0]
    return "user", None


def _named(top: str) -> tuple[Place, str]:
    if top == "vllm":
        return "vllm", "vllm"
    if top == TOOL_PACKAGE:  # an installed vllmdiag distribution
        return "tool", TOOL_PACKAGE
    return "dependency", top


def place_of(
    frames: Sequence[_HasFile], tool_dirs: Sequence[str] = ()
) -> tuple[Place | None, str | None]:
    """Place and package of the innermost meaningful frame (frames innermost last);
    (None, None) when no frame outside the standard library is in view."""
    for frame in reversed(frames):
        place, package = classify(frame.file, tool_dirs)
        if place is not None:
            return place, package
    return None, None


def origin_of(frames: Sequence[_HasFile]) -> tuple[str, str | None]:
    """Place of the innermost meaningful frame, ``unknown`` with none in view (what a
    death line's faulthandler stack records)."""
    place, package = place_of(frames)
    return (place or "unknown"), package
