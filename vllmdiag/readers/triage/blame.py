"""Whose fault a failure is: who must act to fix it, with a one-line why (pure).

Kinds (``origin``):

- ``vllm``: a defect in vLLM's code;
- ``dependency`` (``package`` names it): a defect in a library vLLM uses;
- ``caller`` (``package`` names the framework, none for a user's own script): the code
  driving vLLM calls it wrongly (a removed keyword, an argument vLLM does not take);
- ``config``: the user's settings (flags, model id or path, lengths, a quantization the
  checkpoint lacks): vLLM's own checks that tell the user to change a setting;
- ``environment``: the machine (device memory, memory taken by other processes, a build
  without kernels for the GPU, NCCL or the network, access to the Hub);
- ``tool``: vllmdiag's own code, its probes included: the cell is an ERROR, never a
  verdict;
- ``unknown``: the evidence is not in view (``why`` says what is missing).

Decided in this order, by what the error says and who passed what, never by the innermost
frame alone:

1. a frame of the running vllmdiag raised it: ``tool``;
2. the catalogue entry the message matched says whose it is (``blame:``): vLLM's checks
   that name a setting are ``config`` (also when vllmdiag's probe passed the recipe's
   value on), out of memory is ``environment``, ...;
3. an argument error (a ``TypeError`` about a call's arguments, a pydantic
   ``ValidationError``) blames whoever passed the value: vllmdiag's own probe (``tool``),
   the code outside vLLM that called into it (a framework: ``caller`` + its package; a
   script: ``caller``), or, where the values came in through vLLM's own command line,
   the user's flags (``config``). A validator only carries the check: pydantic is never
   blamed for it;
4. otherwise the frame that raised: vLLM's code is ``vllm``, another package's is
   ``dependency``, the workload's own script is ``caller``; none in view is ``unknown``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from vllmdiag.readers.triage.callers import FRAMEWORKS, framework_in
from vllmdiag.readers.triage.origin import Place, classify

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
#: ``caller:<package>``, or ``frames`` (decided by the frames, the default).
RULE = re.compile(
    r"^(?:frames|vllm|config|environment|unknown|(?:dependency|caller)(?::[\w.-]+)?)$"
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
#: Frames that only look an attribute up for the code above them (torch's
#: ``Module.__getattr__`` raises the ``AttributeError`` of whoever asked for it).
_LOOKUPS = re.compile(r"torch/nn/modules/module\.py$")


@dataclass(frozen=True)
class Blame:
    origin: Origin
    package: str | None
    why: str


@dataclass(frozen=True)
class _Frame:
    place: Place
    package: str | None
    file: str


def blame_text(origin: str, package: str | None, why: str | None) -> str:
    """``config: why`` / ``caller (xinference): why``: whose fault, and why, in a line."""
    who = origin + (f" ({package})" if package and origin not in ("vllm", "tool") else "")
    return f"{who}: {why}" if why else who


def is_argument_error(typ: str, message: str) -> bool:
    """A call's arguments were wrong: a ``TypeError`` about them, or a validation error
    (pydantic's) raised over the values passed."""
    short = typ.rsplit(".", 1)[-1]
    if short == "ValidationError":
        return True
    return short == "TypeError" and bool(_ARGUMENTS.search(message))


def decide(
    typ: str,
    message: str,
    files: Sequence[str],
    *,
    rule: str | None = None,
    rule_why: str | None = None,
    where: tuple[str, str | None] | None = None,
    tool_dirs: Sequence[str] = (),
    wrapper: str | None = None,
) -> Blame:
    """Whose fault the failure is. ``files``: the frames' files, outermost first;
    ``rule``/``rule_why``: the catalogue entry's ``blame`` and ``why``; ``where``: the
    place a death line's reader gave (who printed it, or its stack's innermost frame)."""
    frames = _frames(files, tool_dirs)
    if typ.rsplit(".", 1)[-1] == "AttributeError" and frames and _lookup(frames[-1]):
        while frames and _lookup(frames[-1]):
            frames.pop()  # the lookup raised it; the frame that asked is the one at fault
        if not frames:
            return Blame(
                "unknown",
                None,
                "torch's attribute lookup raised it for the code that asked, which is not in view",
            )
    if not frames and where is not None and where[0] in ("vllm", "dependency", "user", "tool"):
        frames = [_Frame(where[0], where[1], "")]  # type: ignore[arg-type]
    raiser = frames[-1] if frames else None
    argument = is_argument_error(typ, message)
    passer = _passer(frames) if argument else None
    if raiser is not None and raiser.place == "tool":
        at = f" ({_short(raiser.file)})" if raiser.file else ""
        return Blame("tool", "vllmdiag", f"raised in vllmdiag's own code{at}")
    if rule and rule != "frames":
        return _by_rule(rule, rule_why, frames, wrapper)
    if isinstance(passer, _Frame) and passer.place == "tool":
        return Blame(
            "tool",
            "vllmdiag",
            f"vllmdiag's own code ({_short(passer.file)}) passed the arguments "
            f"the {_kind_of(typ)} is about",
        )
    if argument:
        return _by_passer(typ, passer)
    if raiser is not None:
        return _by_place(raiser, rule_why)
    return Blame(
        "unknown",
        None,
        "no frame of the failing code is in view and the message does not say whose it is",
    )


def _frames(files: Sequence[str], tool_dirs: Sequence[str]) -> list[_Frame]:
    out = []
    for f in files:
        place, package = classify(f, tool_dirs)
        if place is not None:
            out.append(_Frame(place, package, f))
    return out


def _passer(frames: list[_Frame]) -> _Frame | str | None:
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


def _by_passer(typ: str, passer: _Frame | str | None) -> Blame:
    kind = _kind_of(typ)
    if passer is None:
        return Blame(
            "unknown", None, f"a {kind} about the values passed, and who passed them is not in view"
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
    assert isinstance(passer, _Frame)
    if passer.place == "dependency":
        return Blame(
            "caller",
            passer.package,
            f"{passer.package} called vLLM with arguments this vLLM does not take "
            f"(the {kind} is about the values it passed)",
        )
    if passer.place == "user":
        return Blame(
            "caller",
            None,
            f"the workload's own script ({_short(passer.file)}) passed arguments this vLLM "
            f"does not take (the {kind} is about the values it passed)",
        )
    return Blame("vllm", "vllm", f"vLLM's code passed the values the {kind} is about")


def _by_rule(rule: str, why: str | None, frames: list[_Frame], wrapper: str | None) -> Blame:
    kind, _, package = rule.partition(":")
    if kind == "caller" and not package:
        outside = [f for f in frames if f.place == "dependency" and f.package not in _CARRIERS]
        package = outside[0].package or "" if outside else (wrapper or "")
    text = why or {
        "vllm": "a defect in vLLM's code",
        "config": "vLLM refused the user's settings",
        "environment": "the machine the engine ran on",
        "unknown": "the message does not say whose it is",
        "dependency": f"a defect in {package or 'a library vLLM uses'}",
        "caller": "the code driving vLLM used it wrongly",
    }.get(kind, "")
    origin: Origin = next((o for o in ORIGINS if o == kind), "unknown")
    return Blame(origin, package or ("vllm" if origin == "vllm" else None), text)


def _by_place(raiser: _Frame, why: str | None) -> Blame:
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
    return Blame("caller", None, why or f"raised in the workload's own script{at}, not in vLLM")


def _lookup(frame: _Frame) -> bool:
    return _LOOKUPS.search(frame.file.replace("\\", "/")) is not None


def _framework(frame: _Frame) -> str | None:
    """The framework driving vLLM that a frame belongs to: an installed package of one,
    or a file inside its checkout."""
    if frame.place == "dependency" and frame.package in FRAMEWORKS:
        return frame.package
    if frame.place == "user" and frame.file:
        return framework_in(frame.file)
    return None


def _kind_of(typ: str) -> str:
    return "validation error" if typ.endswith("ValidationError") else "TypeError"


def _short(path: str) -> str:
    parts = path.replace("\\", "/").rsplit("/", 2)
    return "/".join(parts[-2:]) if len(parts) > 1 else os.path.basename(path)
