"""Whose fault a failure is: who must act to fix it, with a one-line why (pure).

The convention is ``docs/blame.md``. Kinds (``origin``):

- ``vllm``: a defect in vLLM's code;
- ``dependency`` (``package`` names it): a defect in a library vLLM uses;
- ``caller`` (``package`` names the framework, none for a user's own script): the code
  driving vLLM calls it wrongly (a removed keyword, an argument vLLM does not take);
- ``config``: the user's settings (flags, model id or path, lengths, a quantization the
  checkpoint lacks): vLLM's own checks that tell the user to change a setting;
- ``environment``: the machine and what is installed on it (device memory, memory taken
  by other processes, a build without kernels for the GPU, NCCL or the network, access to
  the Hub, packages too old or too new for each other or for the model);
- ``tool``: vllmdiag's own code, its probes included: the cell is an ERROR, never a
  verdict;
- ``unknown``: the evidence is not in view (``why`` says what is missing).

Decided in this order, by what the error says and who passed what, never by the innermost
frame alone:

1. a frame of the running vllmdiag raised it: ``tool``;
2. the catalogue entry the message matched says whose it is (``blame:``): vLLM's checks
   that name a setting are ``config`` (also when vllmdiag's probe passed the recipe's
   value on), out of memory is ``environment``, ...; some entries name a rule the
   frames complete (``request``, ``drift``, ``placement``: see :func:`_by_rule`);
3. an argument error (a ``TypeError`` about a call's arguments, a pydantic
   ``ValidationError``) blames whoever passed the value: vllmdiag's own probe (``tool``),
   the code outside vLLM that called into it (a framework: ``caller`` + its package; a
   script: ``caller``), or, where the values came in through vLLM's own command line,
   the user's flags (``config``). A validator only carries the check: pydantic is never
   blamed for it. With no passer in view, ``unknown``, unless the installed vLLM's
   version (or the vLLM change that dropped the argument) is in view: then the caller,
   unnamed, passes what this vLLM does not take;
4. an attribute a lookup refused (``__getattr__``) is the asker's: see ``lookups``;
5. otherwise the frame that raised (a dispatcher such as ``torch.ops`` only carries the
   call of the op's owner): vLLM's code is ``vllm``, another package's is
   ``dependency``, the workload's own script is ``caller``; none in view is ``unknown``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from vllmdiag.readers.triage.callers import FRAMEWORKS, framework_in, project_of
from vllmdiag.readers.triage.lookups import Frame, lookup_blame, strip_dispatch
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
#: What a catalogue entry's ``blame:`` may say: a kind, ``dependency:<package>``,
#: ``caller:<package>``, ``frames`` (decided by the frames, the default), or a rule the
#: frames complete: ``request`` (a request or prompt too long: the framework that sent it
#: where one is in view, else the user's lengths), ``drift`` (installed versions that do
#: not go together: a framework or script that asked for what is gone is the caller, else
#: the environment), ``placement`` (no device visible: the machine, unless a framework
#: placed the engine, whose placement may be why) and ``kernel`` (a kernel's launch
#: configuration the GPU cannot hold: the code that launched it through Triton).
RULE = re.compile(
    r"^(?:frames|vllm|config|environment|unknown|request|drift|placement|kernel"
    r"|(?:dependency|caller)(?::[\w.-]+)?)$"
)

_ARGUMENTS = re.compile(
    r"unexpected keyword argument|got multiple values for (?:keyword )?argument"
    r"|missing \d+ required (?:positional|keyword-only) argument"
    r"|takes (?:from \d+ to )?\d+ positional arguments? but"
    r"|got some positional-only arguments passed as keyword"
)
#: Libraries that only carry another's check (a validator) or relay a call (an actor
#: framework): never the one who passed a value.
_CARRIERS = frozenset({"pydantic", "pydantic_core", "ray", "xoscar", "typing_extensions"})
#: Actor frameworks that re-raise another process's error: frames that end in one are
#: the receiver's, and who passed the values is in the other process.
_RELAYS = frozenset({"ray", "xoscar"})
_RAY_LLM = re.compile(r"/ray/(?:llm|serve/llm|data/llm)/")
#: What a kernel is compiled and launched through: not the kernel's owner.
_KERNEL_RUNTIMES = frozenset({"triton", "torch"})
#: A message that tells the user to change a setting (vLLM's own checks are worded so):
#: the user's config where vLLM's code raised it.
_SETTING_ADVICE = re.compile(
    r"(?i)\b(?:please|try|consider|you (?:can|could|should|may|must|need to)|make sure"
    r"(?: that)?) (?:to )?(?:set(?:ting)?|us(?:e|ing)|pass(?:ing)?|specify(?:ing)?"
    r"|increas(?:e|ing)|decreas(?:e|ing)|reduc(?:e|ing)|lower(?:ing)?|rais(?:e|ing)"
    r"|enabl(?:e|ing)|disabl(?:e|ing)|add(?:ing)?|remov(?:e|ing)|chang(?:e|ing)"
    r"|adjust(?:ing)?|provid(?:e|ing)|choos(?:e|ing)|select(?:ing)?|run(?:ning)? with)\b"
)
#: Sentences that only say how to debug (``For debugging consider passing
#: CUDA_LAUNCH_BLOCKING=1``, ``run with NCCL_DEBUG=INFO``): no setting to change.
_DEBUGGING = re.compile(
    r"[^.]*(?:debug|CUDA_LAUNCH_BLOCKING|TORCH_USE_CUDA_DSA|for (?:more )?details)[^.]*\.?",
    re.IGNORECASE,
)
#: A message that says to install or upgrade a package: the installed stack.
_INSTALL_ADVICE = re.compile(
    r"(?i)\bpip install\b|\bplease (?:install|upgrade|update|reinstall)\b"
    r"|\b(?:upgrade|update) (?:your )?(?:transformers|torch|vllm|flashinfer|triton|xformers)\b"
    r"|\brequires? [\w-]+ ?(?:>=|==|>)"
)
#: vLLM's own API, as an argument error names the callable it is about.
_VLLM_CALLEE = re.compile(
    r"^(?:Async)?(?:EngineArgs|LLMEngine|LLM|SamplingParams|PoolingParams|LoRARequest"
    r"|\w*Config|TokensPrompt|TextPrompt|GuidedDecodingParams|StructuredOutputsParams"
    r"|AsyncLLM|MQLLMEngine)\b"
)
#: A callable of transformers' (a processor, tokenizer, model class or its loader).
_LIBRARY_CALLEE = re.compile(
    r"^\w*(?:Processor|Tokenizer|TokenizerFast|FeatureExtractor|ImageProcessor\w*"
    r"|PreTrainedModel|ForCausalLM|ForConditionalGeneration)\b|\bfrom_pretrained\b"
    r"|\bapply_chat_template\b"
)


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


def blame_text(origin: str, package: str | None, why: str | None) -> str:
    """``config: why`` / ``caller (xinference): why``: whose fault, and why, in a line."""
    who = origin + (f" ({package})" if package and origin not in ("vllm", "tool") else "")
    return f"{who}: {why}" if why else who


def is_argument_error(typ: str, message: str) -> bool:
    """A call's arguments were wrong: a ``TypeError`` about them (typed, or quoted
    without its type), or a validation error (pydantic's) raised over the values
    passed."""
    short = typ.rsplit(".", 1)[-1]
    if short == "ValidationError":
        return True
    return short in ("TypeError", "") and bool(_ARGUMENTS.search(message))


def decide(
    typ: str,
    message: str,
    files: Sequence[str],
    *,
    funcs: Sequence[str] = (),
    rule: str | None = None,
    rule_why: str | None = None,
    where: tuple[str, str | None] | None = None,
    tool_dirs: Sequence[str] = (),
    wrapper: str | None = None,
    seen: Seen | None = None,
) -> Blame:
    """Whose fault the failure is. ``files`` (and ``funcs``, their functions): the
    frames, outermost first; ``rule``/``rule_why``: the catalogue entry's ``blame`` and
    ``why``; ``where``: the place a death line's reader gave (who printed it, or its
    stack's innermost frame); ``seen``: what else the log shows."""
    seen = seen or Seen(wrapper=wrapper, tool_dirs=tuple(tool_dirs))
    dirs = tuple(tool_dirs) or seen.tool_dirs
    frames = _frames(files, funcs, dirs)
    if not frames and where is not None and where[0] in ("vllm", "dependency", "user", "tool"):
        frames = [Frame(where[0], where[1], "", "")]  # type: ignore[arg-type]
    raiser = frames[-1] if frames else None
    if raiser is not None and raiser.place == "tool":
        at = f" ({_short(raiser.file)})" if raiser.file else ""
        return Blame("tool", "vllmdiag", f"raised in vllmdiag's own code{at}")
    if rule and rule != "frames":
        return _by_rule(rule, rule_why, frames, seen)
    argument = is_argument_error(typ, message)
    drift = _library_drift(typ, message, frames) if argument else None
    if drift is not None:
        return drift
    passer = _passer(frames) if argument else None
    if isinstance(passer, Frame) and passer.place == "tool":
        return Blame(
            "tool",
            "vllmdiag",
            f"vllmdiag's own code ({_short(passer.file)}) passed the arguments "
            f"the {_kind_of(typ)} is about",
        )
    if argument:
        return _by_passer(typ, passer, seen)
    looked = lookup_blame(typ, message, frames)
    if looked is not None:
        origin, package, why = looked
        if origin == "asker":
            frames = list(frames[: len(frames) - int(package or 0)])
        else:
            return Blame(origin, package, why)  # type: ignore[arg-type]
    frames = strip_dispatch(frames)
    raiser = frames[-1] if frames else None
    advised = _by_advice(message, raiser)
    if advised is not None:
        return advised
    if raiser is not None:
        return _by_place(raiser, rule_why)
    return Blame(
        "unknown",
        None,
        "no frame of the failing code is in view and the message does not say whose it is",
    )


def _by_advice(message: str, raiser: Frame | None) -> Blame | None:
    """A message raised in vLLM's code (or with no frame in view) that says what to do:
    install or upgrade a package (the installed stack: ``environment``), or change a
    setting (vLLM's own check: ``config``). A library's own advice about a setting is
    left to its frames."""
    if raiser is not None and raiser.place not in ("vllm", "dependency"):
        return None
    if _INSTALL_ADVICE.search(message):
        return Blame(
            "environment",
            None,
            "the message says to install or upgrade a package: the installed stack, not the "
            "code that raised it",
        )
    advice = _DEBUGGING.sub("", message)
    if (raiser is None or raiser.place == "vllm") and _SETTING_ADVICE.search(advice):
        return Blame(
            "config",
            None,
            "vLLM's own check says which setting to change: the user's settings, not a "
            "defect in vLLM",
        )
    return None


def _library_drift(typ: str, message: str, frames: list[Frame]) -> Blame | None:
    """An argument error about a library's callable (a processor, a tokenizer) that
    vLLM's code called: vLLM passes what the installed library does not take, or the
    library forwards what it no longer takes: the installed versions do not go
    together. A framework or script that called the library is the caller, decided by
    the passer as usual."""
    if typ.rsplit(".", 1)[-1] != "TypeError" or _VLLM_CALLEE.match(message):
        return None
    outside = [f for f in frames if f.package not in _CARRIERS]
    if not outside:
        return None
    inner = outside[-1]
    if inner.place == "vllm" and _LIBRARY_CALLEE.search(message):
        return Blame(
            "environment",
            None,
            "vLLM passes a library's callable an argument the installed release does not "
            "take: the installed versions of vLLM and that library do not go together",
        )
    if inner.place == "dependency" and inner.package not in FRAMEWORKS:
        above = [f for f in outside if f.package != inner.package]
        if above and above[-1].place == "vllm":
            return Blame(
                "environment",
                None,
                f"vLLM called {inner.package}, which refused the arguments (the installed "
                f"{inner.package} does not take what this vLLM passes): the installed "
                "versions do not go together",
            )
    return None


def _frames(files: Sequence[str], funcs: Sequence[str], tool_dirs: Sequence[str]) -> list[Frame]:
    out = []
    for i, f in enumerate(files):
        place, package = classify(f, tool_dirs)
        if place is not None:
            out.append(Frame(place, package, f, funcs[i] if i < len(funcs) else ""))
    return out


def _passer(frames: list[Frame]) -> Frame | str | None:
    """Who passed the arguments: the innermost frame that is no carrier; where that is
    vLLM's, the code outside vLLM that called into it, or ``"vllm-entry"`` when vLLM's
    own entry point (its command line) took the values."""
    if frames and frames[-1].package in _RELAYS:
        return None  # re-raised from another process: the passer is not in view
    inner = [f for f in frames if f.package not in _CARRIERS]
    if not inner:
        return None
    i = len(inner) - 1
    if inner[i].place != "vllm":
        return inner[i]
    while i >= 0 and inner[i].place == "vllm":
        i -= 1
    return inner[i] if i >= 0 else "vllm-entry"


def _by_passer(typ: str, passer: Frame | str | None, seen: Seen) -> Blame:
    kind = _kind_of(typ)
    if passer is None:
        if kind == "TypeError" and (seen.vllm_version or seen.vllm_change):
            which = f"vLLM {seen.vllm_version}" if seen.vllm_version else "the vLLM change it links"
            return Blame(
                "caller",
                seen.framework,
                f"the code driving vLLM passes arguments this vLLM does not take ({which} is "
                "in view); "
                + (
                    f"{seen.framework} drives it"
                    if seen.framework
                    else "which framework or script passed them is not in view"
                ),
            )
        return Blame(
            "unknown",
            None,
            f"a {kind} about the values passed, and neither who passed them nor the "
            "version of the code they were passed to is in view",
        )
    if passer == "vllm-entry":
        if kind == "validation error":
            return Blame(
                "config",
                None,
                "vLLM's check refused a setting the user gave it (its validator only "
                "carried the check)",
            )
        return Blame(
            "vllm", "vllm", "vLLM's own code called itself with arguments it does not take"
        )
    assert isinstance(passer, Frame)
    if passer.place == "dependency":
        return Blame(
            "caller",
            passer.package,
            f"{passer.package} called vLLM with arguments this vLLM does not take "
            f"(the {kind} is about the values it passed)",
        )
    if passer.place == "user":
        project = project_of(passer.file)
        return Blame(
            "caller",
            project,
            f"the workload's own script ({_short(passer.file)}"
            + (f", {project}'s" if project else "")
            + f") passed arguments this vLLM does not take (the {kind} is about the values "
            "it passed)",
        )
    return Blame("vllm", "vllm", f"vLLM's code passed the values the {kind} is about")


def _by_rule(rule: str, why: str | None, frames: list[Frame], seen: Seen) -> Blame:
    kind, _, package = rule.partition(":")
    framework = _framework_in_view(frames, seen)
    if kind == "request":
        if framework is not None:
            return Blame(
                "caller",
                framework,
                f"{framework} sent vLLM a request or prompt longer than the engine's context "
                "(vLLM's own check refused it; the framework should fit or filter what it "
                "sends)",
            )
        return Blame("config", None, why or "vLLM's own check refused the user's lengths")
    if kind == "drift":
        asker = _asker(frames)
        if asker is not None:
            who, pkg = asker
            return Blame(
                "caller",
                pkg,
                f"{who} asks for what the installed packages no longer have (or do not have "
                f"yet): it must follow their current API" + (f"; {why}" if why else ""),
            )
        return Blame(
            "environment",
            None,
            why or "the installed packages do not go together (one lacks what another asks)",
        )
    if kind == "placement":
        if framework is not None:
            return Blame(
                "unknown",
                None,
                f"no device was visible to the engine {framework} placed: its placement (the "
                "GPUs it gave the actor) or the machine, which of the two is not in view",
            )
        return Blame("environment", None, why or "no device is visible to the engine")
    if kind == "kernel":
        owner = [f for f in frames if f.package not in _KERNEL_RUNTIMES]
        if owner:
            blamed = _by_place(owner[-1], None)
            return Blame(
                blamed.origin,
                blamed.package,
                f"{why or 'the kernel asks more of the GPU than it has'}; the kernel and its "
                f"launch configuration are {_owner_words(blamed)}",
            )
        return Blame("unknown", None, "the code that launched the kernel is not in view")
    if kind == "caller" and not package:
        outside = [f for f in frames if f.place == "dependency" and f.package not in _CARRIERS]
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


def _owner_words(blamed: Blame) -> str:
    if blamed.origin == "vllm":
        return "vLLM's"
    return f"{blamed.package}'s" if blamed.package else "the workload's own"


def _framework_in_view(frames: list[Frame], seen: Seen) -> str | None:
    """A framework driving vLLM that the frames (or the log's prefixes) show."""
    for f in reversed(frames):
        name = _framework(f)
        if name is not None:
            return name
    return seen.framework or seen.wrapper


def _asker(frames: list[Frame]) -> tuple[str, str | None] | None:
    """The framework or script whose frame asked (the innermost frame outside vLLM's
    dependencies), or None where it is vLLM or a library."""
    for f in reversed(frames):
        name = _framework(f)
        if name is not None:
            return name, name
        if f.place == "user":
            project = project_of(f.file)
            return (f"the workload's own script ({_short(f.file)})", project)
        if f.place == "vllm":
            return None
    return None


def _by_place(raiser: Frame, why: str | None) -> Blame:
    if raiser.place == "vllm":
        return Blame("vllm", "vllm", why or "raised in vLLM's own code")
    framework = _framework(raiser)
    if framework is not None:
        return Blame(
            "caller",
            framework,
            why or f"raised in {framework}'s code, which drives vLLM (vLLM does not use it)",
        )
    if raiser.place == "dependency":
        return Blame("dependency", raiser.package, why or f"raised in {raiser.package}'s code")
    at = f" ({_short(raiser.file)})" if raiser.file else ""
    project = project_of(raiser.file) if raiser.file else None
    return Blame("caller", project, why or f"raised in the workload's own script{at}, not in vLLM")


def _framework(frame: Frame) -> str | None:
    """The framework driving vLLM that a frame belongs to: an installed package of one,
    or a file inside its checkout."""
    if frame.place == "dependency" and frame.package in FRAMEWORKS:
        return frame.package
    if frame.package == "ray" and _RAY_LLM.search(frame.file.replace("\\", "/")):
        return "ray"  # Ray Serve LLM and Ray Data LLM drive vLLM (Ray itself only relays)
    if frame.place == "user" and frame.file:
        return framework_in(frame.file)
    return None


def _kind_of(typ: str) -> str:
    return "validation error" if typ.endswith("ValidationError") else "TypeError"


def _short(path: str) -> str:
    parts = path.replace("\\", "/").rsplit("/", 2)
    return "/".join(parts[-2:]) if len(parts) > 1 else os.path.basename(path)
