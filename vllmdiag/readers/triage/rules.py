"""The rules a catalogue entry's ``blame:`` names, completed by the frames (pure;
docs/blame.md, rule 2): ``request`` (the framework in view that sent it, else the user's
lengths), ``drift`` (who asked for what the installed packages lack), ``placement`` (no
device: the machine, unless a framework or a placement group placed the engine, or a
platform plugin failed to load), ``kernel`` (the code that launched a Triton kernel the GPU
cannot hold), ``driver`` (the code driving vLLM, where in view), ``loader`` (the framework
that handed vLLM's weight loader its weights, else vLLM), and the kinds themselves, with a
platform plugin's own code its plugin's."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from vllmdiag.readers.triage.callers import FRAMEWORKS, LOCKSTEP, project_of
from vllmdiag.readers.triage.lookups import Frame
from vllmdiag.readers.triage.parties import (
    CARRIERS,
    ORIGINS,
    Blame,
    Origin,
    Seen,
    by_place,
    framework_in_view,
    framework_of,
    short,
)

#: What a catalogue entry's ``blame:`` may say: a kind, ``dependency:<package>``,
#: ``caller:<package>``, ``frames`` (decided by the frames, the default), or a rule the
#: frames complete: ``request`` (a request or prompt too long: the framework that sent it
#: where one is in view, else the user's lengths), ``drift`` (installed versions that do
#: not go together: a framework or script that asked for what is gone is the caller, else
#: the environment), ``placement`` (no device visible: the machine, unless a framework
#: placed the engine, whose placement may be why), ``kernel`` (a kernel's launch
#: configuration the GPU cannot hold: the code that launched it through Triton),
#: ``driver`` (the code driving vLLM did it: the framework or script in view, else
#: unknown) and ``loader`` (names vLLM's weight loader does not have: the framework whose
#: frame handed vLLM the weights, else vLLM's own mapping).
RULE = re.compile(
    r"^(?:frames|vllm|config|environment|unknown|request|drift|placement|kernel|driver|loader"
    r"|(?:dependency|caller)(?::[\w.-]+)?)$"
)


#: What a kernel is compiled and launched through: not the kernel's owner.
_KERNEL_RUNTIMES = frozenset({"triton", "torch"})


#: vLLM's compiled parts: missing from a source checkout that was never built, or from a
#: wheel for another platform: the install's, not vLLM's code.
_VLLM_COMPILED = re.compile(
    r"\bvllm\.(?:_C|_moe_C|_rocm_C|cumem_allocator|vllm_flash_attn|_flashmla_C)\b"
)


#: A module of vLLM's that a message names as the one missing something (``No module
#: named 'vllm.benchmarks.serve'``, ``cannot import name 'x' from 'vllm.utils'``).
_VLLM_MODULE = re.compile(r"'(?P<module>vllm(?:\.\w+)+)'")


#: A Ray placement group's bundle resources in a node's resource list
#: (``'GPU_group_0_5999116f..': 1.0``).
_PLACEMENT_GROUP = re.compile(r"'GPU_group_(?:\d+_)?[0-9a-f]{16,}'")
#: Part of a GPU left in a node's resource list (``'GPU': 0.05``): other actors hold the
#: rest of it.
_FRACTIONAL_GPU = re.compile(r"'GPU': 0\.\d*[1-9]")


#: A missing module's top package (``No module named 'cosyvoice.vllm'``).
_MISSING_TOP = re.compile(r"(?:No module named|from) '(?P<top>\w+)[.']")


#: A model implementation of vLLM's (``vllm.model_executor.models.deepseek_ocr``).
_VLLM_MODEL_MODULE = re.compile(r"'(?P<module>vllm\.model_executor\.models\.\w+)'")


_IMPORTING = re.compile(r"^No module named |^cannot import name ")


@dataclass(frozen=True)
class _Case:
    """What one rule reads: the catalogue entry's why, the frames, what else the log
    shows, the message, and the framework driving vLLM that is in view."""

    why: str | None
    frames: list[Frame]
    seen: Seen
    message: str
    framework: str | None


def by_rule(rule: str, why: str | None, frames: list[Frame], seen: Seen, message: str) -> Blame:
    """Whose fault it is by a catalogue entry's ``blame:`` (see :data:`RULE`), the frames
    and the log completing it."""
    kind, _, package = rule.partition(":")
    case = _Case(why, frames, seen, message, framework_in_view(frames, seen))
    completed = _RULES.get(kind)
    if completed is not None:
        blamed = completed(case)
        if blamed is not None:
            return blamed
        kind = "vllm"  # ``loader`` with no framework in view: vLLM's own mapping
    if kind == "vllm":
        plugin = _plugin_raiser(frames)
        if plugin is not None:
            return Blame(
                "caller" if plugin in FRAMEWORKS else "dependency",
                plugin,
                f"{why or 'a defect in the code that raised it'}; raised in the platform plugin "
                f"{plugin}'s implementation of it, which is that plugin's to fix",
            )
    if kind == "caller" and not package:
        outside = [f for f in frames if f.place == "dependency" and f.package not in CARRIERS]
        package = outside[0].package or "" if outside else (seen.wrapper or "")
    text = why or {
        "vllm": "a defect in vLLM's code",
        "config": "vLLM refused the user's settings",
        "environment": "the machine the engine ran on and what is installed there",
        "unknown": "the message does not say whose it is",
        "dependency": f"a defect in {package or 'a library vLLM uses'}",
        "caller": "the code driving vLLM used it wrongly",
    }.get(kind, "")
    origin: Origin = next((o for o in ORIGINS if o == kind), "unknown")
    return Blame(origin, package or ("vllm" if origin == "vllm" else None), text)


def _request(c: _Case) -> Blame:
    if c.framework is not None:
        what = f": {c.why}" if c.why else " that vLLM's own check refused"
        return Blame(
            "caller",
            c.framework,
            f"{c.framework} built and sent the request (its own code or log line is in "
            f"view){what}; the framework must fit or change what it sends",
        )
    return Blame("config", None, c.why or "vLLM's own check refused the user's lengths")


def _loader(c: _Case) -> Blame | None:
    passer = next((framework_of(f) for f in c.frames if framework_of(f) is not None), None)
    if passer is None:
        return None
    return Blame(
        "caller",
        passer,
        f"{passer} handed vLLM's weight loader these weights (its own weight sync, in view): "
        f"the names it passes are not the model's; {c.why or ''}".rstrip("; "),
    )


def _driver(c: _Case) -> Blame:
    what = c.why or "the code driving vLLM used it wrongly"
    driver = _driver_in_view(c.frames, c.seen)
    if driver is not None:
        who, pkg = driver
        return Blame("caller", pkg, f"{what} ({who})")
    return Blame(
        "unknown",
        None,
        f"{what}; which code drove it (a script, a framework, or vLLM itself) is not in view",
    )


def _drift(c: _Case) -> Blame:
    model = _VLLM_MODEL_MODULE.search(c.message)
    if model is not None:
        return Blame(
            "environment",
            None,
            f"the installed vLLM has no {model['module']}: it has no implementation of that "
            "model yet (a release older than the model), whoever asked for it",
        )
    asker = _asker(c.frames)
    own = _own_project_module(c.frames, c.message) if asker is not None else None
    if own is not None:
        return Blame(
            "environment",
            None,
            f"the script asks for a module of its own project ({own}) that is not there: "
            "the checkout or the installed copy of that project does not match the script",
        )
    if asker is not None:
        who, pkg = asker
        return Blame(
            "caller",
            pkg,
            f"{who} asks for what the installed packages no longer have (or do not have "
            f"yet): it must follow their current API" + (f"; {c.why}" if c.why else ""),
        )
    if _vllm_asks_its_own(c.frames, c.message):
        return Blame(
            "vllm",
            "vllm",
            "vLLM's own code asks for a module of vLLM's that its install does not have: "
            "vLLM's package does not ship what its code needs",
        )
    return Blame(
        "environment",
        None,
        c.why or "the installed packages do not go together (one lacks what another asks)",
    )


def _placement(c: _Case) -> Blame:
    if _PLACEMENT_GROUP.search(c.message):
        return Blame(
            "unknown",
            None,
            "the node's GPUs are held by a placement group's bundles (GPU_group_..), which the "
            "code driving vLLM made: its placement, or the machine, which is not in view",
        )
    if _FRACTIONAL_GPU.search(c.message):
        return Blame(
            "unknown",
            None,
            "Ray's accounting shows part of the node's GPU left ('GPU': 0.x): other actors "
            "hold the rest, by the placement of the code driving vLLM or the machine's other "
            "work, which is not in view",
        )
    if c.seen.failed_plugin is not None:
        return Blame(
            "unknown",
            None,
            f"vLLM's platform plugin {c.seen.failed_plugin} failed to load (logged above), so "
            "no device could be found: the plugin's own error decides, and its exception line "
            "is not in view",
        )
    if c.framework is not None:
        return Blame(
            "unknown",
            None,
            f"no device was visible to the engine {c.framework} placed: its placement (the "
            "GPUs it gave the actor) or the machine, which of the two is not in view",
        )
    if c.seen.ray_task is not None:
        return Blame(
            "unknown",
            None,
            f"no device was visible in the Ray task {c.seen.ray_task}, which the code driving "
            "vLLM started: its placement (the GPUs it asked for) or the machine, which of the "
            "two is not in view",
        )
    return Blame("environment", None, c.why or "no device is visible to the engine")


def _kernel(c: _Case) -> Blame:
    owner = [f for f in c.frames if f.package not in _KERNEL_RUNTIMES]
    if not owner:
        return Blame("unknown", None, "the code that launched the kernel is not in view")
    blamed = by_place(owner[-1], None)
    return Blame(
        blamed.origin,
        blamed.package,
        f"{c.why or 'the kernel asks more of the GPU than it has'}; the kernel and its launch "
        f"configuration are {_owner_words(blamed)}",
    )


_RULES: dict[str, Callable[[_Case], Blame | None]] = {
    "request": _request,
    "loader": _loader,
    "driver": _driver,
    "drift": _drift,
    "placement": _placement,
    "kernel": _kernel,
}


def _owner_words(blamed: Blame) -> str:
    if blamed.origin == "vllm":
        return "vLLM's"
    return f"{blamed.package}'s" if blamed.package else "the workload's own"


def _vllm_asks_its_own(frames: list[Frame], message: str) -> bool:
    """vLLM's own code asked for a module or name of vLLM's that is not there, and it
    is none of vLLM's compiled parts. The asker is the innermost frame that is no
    carrier; for an import, a module's top level (a frame inside a function is the
    stack of a paste that cut the importing module's frame)."""
    inner = [f for f in frames if f.package not in CARRIERS]
    if not inner or inner[-1].place != "vllm":
        return False
    if _IMPORTING.search(message) and inner[-1].func != "<module>":
        return False
    m = _VLLM_MODULE.search(message)
    return m is not None and not _VLLM_COMPILED.search(m["module"])


def _plugin_raiser(frames: list[Frame]) -> str | None:
    """The vLLM platform plugin whose frame raised (``vllm_ascend``), or None."""
    inner = [f for f in frames if f.package not in CARRIERS]
    if inner and inner[-1].place == "dependency" and inner[-1].package in LOCKSTEP:
        return inner[-1].package
    return None


def _own_project_module(frames: list[Frame], message: str) -> str | None:
    """The module a script asks for where it is its own project's (``CosyVoice/
    vllm_example.py`` importing ``cosyvoice.vllm``), or None."""
    top = _MISSING_TOP.search(message)
    script = next((f for f in reversed(frames) if f.place == "user"), None)
    if top is None or script is None or top["top"] == "vllm":
        return None  # (a folder named vllm in the project does not make vLLM's modules its own)
    folders = {p.lower() for p in script.file.replace("\\", "/").split("/")[:-1]}
    return top["top"] if top["top"].lower() in folders else None


def _driver_in_view(frames: list[Frame], seen: Seen) -> tuple[str, str | None] | None:
    """The framework or script driving vLLM that the log shows: a frame of its code, a
    framework the log names, or the workload's own script."""
    framework = framework_in_view(frames, seen)
    if framework is not None:
        return framework, framework
    for f in frames:
        if f.place == "user":
            return f"the workload's own script ({short(f.file)})", project_of(f.file)
    return None


def _asker(frames: list[Frame]) -> tuple[str, str | None] | None:
    """The framework or script whose frame asked (the innermost frame that is not a
    carrier), or None where vLLM or a library (a vLLM plugin included) asked: then the
    installed packages do not go together, whoever started the process."""
    for f in reversed(frames):
        name = framework_of(f)
        if name is not None:
            return None if name in LOCKSTEP else (name, name)
        if f.place == "user":
            project = project_of(f.file)
            return (f"the workload's own script ({short(f.file)})", project)
        if f.place in ("vllm", "dependency") and f.package not in CARRIERS:
            return None
    return None
