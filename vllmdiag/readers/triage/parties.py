"""Who the parties of a failure are, as blame names them (pure): the kinds of who must act
(``Origin``), a decided blame (``Blame``) with what the log shows besides the frames
(``Seen``), and who a frame belongs to: vLLM, a framework driving it (an installed package
of one, its checkout, a folder of it under another name), another library, or the
workload's own script (``by_place``). The rules that decide are in ``blame``, ``rules``
and ``arguments``; docs/blame.md is the convention."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from vllmdiag.readers.triage.callers import FRAMEWORKS, framework_in, path_project, project_of
from vllmdiag.readers.triage.lookups import Frame
from vllmdiag.readers.triage.origin import classify

Origin = Literal["vllm", "dependency", "caller", "config", "environment", "tool", "unknown"]


ORIGINS: tuple[Origin, ...] = (
    "vllm",
    "dependency",
    "caller",
    "config",
    "environment",
    "tool",
    "unknown",
)


#: Libraries that only carry another's check (a validator) or relay a call (an actor
#: framework): never the one who passed a value.
#: (mmengine's registry builds the object its caller's config names)
CARRIERS = frozenset(
    {"pydantic", "pydantic_core", "ray", "xoscar", "typing_extensions", "mmengine"}
)


#: Actor frameworks that re-raise another process's error: frames that end in one are
#: the receiver's, and who passed the values is in the other process.
RELAYS = frozenset({"ray", "xoscar"})


_RAY_LLM = re.compile(r"/ray/(?:llm|serve/llm|data/llm)/")


@dataclass(frozen=True)
class Blame:
    origin: Origin
    package: str | None
    why: str


@dataclass(frozen=True)
class Seen:
    """What the log shows besides the failing error's own frames: a program that built
    vLLM's command line, a framework a process tag or logger names, and whether the
    installed vLLM's version (or a vLLM change the paste links) is in view."""

    wrapper: str | None = None
    framework: str | None = None
    vllm_version: str | None = None
    vllm_change: bool = False
    tool_dirs: tuple[str, ...] = field(default=())
    failed_plugin: str | None = None
    #: the Ray task or actor the failing process is, where the code driving vLLM started
    #: it (its tag names no process of vLLM's own)
    ray_task: str | None = None


def blame_text(origin: str, package: str | None, why: str | None) -> str:
    """``config: why`` / ``caller (xinference): why``: whose fault, and why, in a line."""
    who = origin + (f" ({package})" if package and origin not in ("vllm", "tool") else "")
    return f"{who}: {why}" if why else who


def frames_of(files: Sequence[str], funcs: Sequence[str], tool_dirs: Sequence[str]) -> list[Frame]:
    out: list[Frame] = []
    for i, f in enumerate(files):
        if f == "<string>" and out and out[-1].place == "dependency":
            # code a library ran from a string (setuptools running the setup.py of a
            # package pip builds): the library's, not a script of the user's
            continue
        place, package = classify(f, tool_dirs)
        if place is not None:
            out.append(Frame(place, package, f, funcs[i] if i < len(funcs) else ""))
    roots = {r for f in out if f.place == "vllm" and (r := _checkout_root(f.file))}
    return [
        Frame("vllm", "vllm", f.file, f.func)
        if f.place == "user" and _checkout_root(f.file, top=True) in roots
        else f
        for f in out
    ]


def _checkout_root(path: str, *, top: bool = False) -> str:
    """The folder of vLLM's package in a source checkout (``/workspace/vllm/``) where
    ``path`` lies under it (``top``: directly in it, ``/workspace/vllm/config.py``); else
    empty. A module directly in a folder named ``vllm`` is vLLM's where other frames of the
    same stack lie deeper in that folder as vLLM's (the image's checkout at
    ``/workspace/vllm``), not a user's script in a project so named."""
    p = path.replace("\\", "/")
    cut = p.rfind("/vllm/")
    if cut == -1 or (top and "/" in p[cut + len("/vllm/") :]):
        return ""
    return p[: cut + len("/vllm/")]


def framework_in_view(frames: list[Frame], seen: Seen) -> str | None:
    """A framework driving vLLM that the frames (or the log's prefixes) show."""
    for f in reversed(frames):
        name = framework_of(f)
        if name is not None:
            return name
    return seen.framework or seen.wrapper


#: Where a framework parses the arguments the user gave it (LLaMA-Factory's
#: ``hparams/parser.py``, ms-swift's ``_parse_args``): a value it refuses there is the
#: user's setting, not the framework's call of vLLM.
_ARGUMENT_FILE = re.compile(r"(?:^|/)(?:hparams|arguments?)/[^/]+$|(?:^|/)arguments?\.py$")
_ARGUMENT_FUNC = re.compile(r"^_?(?:parse|get|check|verify|validate)_(?:\w+_)?args$")


def by_place(raiser: Frame, why: str | None) -> Blame:
    if raiser.place == "vllm":
        return Blame("vllm", "vllm", why or "raised in vLLM's own code")
    framework = framework_of(raiser)
    if framework is not None and (
        _ARGUMENT_FILE.search(raiser.file.replace("\\", "/")) or _ARGUMENT_FUNC.match(raiser.func)
    ):
        return Blame(
            "config",
            None,
            f"{framework}'s own check of the arguments the user gave it refused them "
            f"({raiser.func or short(raiser.file)}): the user's settings",
        )
    if framework is not None:
        return Blame(
            "caller",
            framework,
            why or f"raised in {framework}'s code, which drives vLLM (vLLM does not use it)",
        )
    if raiser.place == "dependency":
        return Blame("dependency", raiser.package, why or f"raised in {raiser.package}'s code")
    at = f" ({short(raiser.file)})" if raiser.file else ""
    project = project_of(raiser.file) if raiser.file else None
    return Blame("caller", project, why or f"raised in the workload's own script{at}, not in vLLM")


def framework_of(frame: Frame) -> str | None:
    """The framework driving vLLM that a frame belongs to: an installed package of one,
    or a file inside its checkout."""
    if frame.place == "dependency" and frame.package in FRAMEWORKS:
        return frame.package
    if frame.package == "ray" and _RAY_LLM.search(frame.file.replace("\\", "/")):
        return "ray"  # Ray Serve LLM and Ray Data LLM drive vLLM (Ray itself only relays)
    if frame.place == "dependency":
        return path_project(frame.file)  # a framework inside a library's package
    if frame.place == "user" and frame.file:
        return framework_in(frame.file)
    return None


def short(path: str) -> str:
    parts = path.replace("\\", "/").rsplit("/", 2)
    return "/".join(parts[-2:]) if len(parts) > 1 else os.path.basename(path)
