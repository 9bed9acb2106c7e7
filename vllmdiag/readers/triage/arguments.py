"""An argument error blames whoever passed the values (pure; docs/blame.md, rule 3): the
code outside vLLM that called into it, vLLM's own command line (the user's flags), a
framework relaying the error; a library's callable refusing what vLLM (or a library it
called) passes is the installed pair. Validators and actor frameworks only carry the call."""

from __future__ import annotations

import re

from vllmdiag.readers.triage.callers import FRAMEWORKS, LOCKSTEP, project_of
from vllmdiag.readers.triage.lookups import Frame
from vllmdiag.readers.triage.parties import (
    CARRIERS,
    RELAYS,
    Blame,
    Seen,
    framework_of,
    short,
)

_ARGUMENTS = re.compile(
    r"unexpected keyword argument|got multiple values for (?:keyword )?argument"
    r"|missing \d+ required (?:positional|keyword-only) argument"
    r"|takes (?:from \d+ to )?\d+ positional arguments? but"
    r"|got some positional-only arguments passed as keyword"
)


#: vLLM's Python API that hands its caller's keyword arguments on to the engine's
#: arguments (``LLM(**kwargs)`` builds ``EngineArgs(**kwargs)``): where its frame is the
#: outermost in view, the values came from a caller the paste cut.
_FORWARDS_KEYWORDS = re.compile(r"(?:^|/)vllm/entrypoints/llm\.py$")


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


#: pydantic's list of errors as an HTTP server answers a request it refused
#: (``[{'type': 'missing', 'loc': ('body',), 'msg': 'Field required', ..}]``).
_ERROR_LIST = re.compile(r"^\[\{'type': '\w+', 'loc': \(")


def is_argument_error(typ: str, message: str) -> bool:
    """A call's arguments were wrong: a ``TypeError`` about them (typed, or quoted
    without its type), or a validation error (pydantic's) raised over the values
    passed, also as the list of errors a server answers a request with (typed by its
    body as ``BadRequestError``, or untyped)."""
    short = typ.rsplit(".", 1)[-1]
    if short == "ValidationError" or (
        short in ("", "BadRequestError") and _ERROR_LIST.match(message)
    ):
        return True
    return short in ("TypeError", "") and bool(_ARGUMENTS.search(message))


def library_drift(typ: str, message: str, frames: list[Frame]) -> Blame | None:
    """An argument error about a library's callable (a processor, a tokenizer) that
    vLLM's code called: vLLM passes what the installed library does not take, or the
    library forwards what it no longer takes: the installed versions do not go
    together. A framework or script that called the library is the caller, decided by
    the passer as usual."""
    if typ.rsplit(".", 1)[-1] != "TypeError" or _VLLM_CALLEE.match(message):
        return None
    outside = [f for f in frames if f.package not in CARRIERS]
    if not outside:
        return None
    inner = outside[-1]
    if inner.place == "vllm" and _foreign_function(message, frames):
        return Blame(
            "environment",
            None,
            "vLLM's code calls a plain function no frame in view defines (another package's, "
            "as the transformers helpers vLLM imports) with arguments the installed release "
            "does not take: the installed versions do not go together",
        )
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
            callee = message.split("(", 1)[0] or "a callable"
            return Blame(
                "environment",
                None,
                f"vLLM's call into {inner.package} ended in an argument error about {callee}: "
                "what the installed packages pass each other does not fit, the installed "
                "versions do not go together",
            )
    return None


#: The plain function an argument error names (``layer_type_validation() takes 1
#: positional argument but 2 were given``), behind Xinference's ``[address=..]`` tag.
_FUNCTION_CALLED = re.compile(
    r"^(?:\[address=[^\]]*\]\s*)?(?P<name>[a-z_][a-z0-9_]*)\(\) (?:takes|got|missing)\b"
)


def _foreign_function(message: str, frames: list[Frame]) -> bool:
    """The argument error names a plain function (no class) that no frame in view
    defines: vLLM's code called another package's function (transformers'
    ``layer_type_validation``)."""
    f = _FUNCTION_CALLED.match(message)
    return f is not None and all(fr.func != f["name"] for fr in frames)


def passer_of(frames: list[Frame]) -> Frame | str | None:
    """Who passed the arguments: the innermost frame that is no carrier; where that is
    vLLM's, the code outside vLLM that called into it, or ``"vllm-entry"`` when vLLM's
    own entry point (its command line) took the values."""
    if frames and frames[-1].package in RELAYS:
        return None  # re-raised from another process: the passer is not in view
    inner = [f for f in frames if f.package not in CARRIERS]
    if not inner:
        return None
    i = len(inner) - 1
    if inner[i].place != "vllm":
        return inner[i]
    while i >= 0 and inner[i].place == "vllm":
        i -= 1
    if i >= 0:
        return inner[i]
    if _FORWARDS_KEYWORDS.search(inner[0].file.replace("\\", "/")):
        return None  # LLM(**kwargs) passes its caller's keywords on: that caller is cut
    return "vllm-entry"


def by_passer(
    typ: str, passer: Frame | str | None, seen: Seen, no_frames: bool, message: str = ""
) -> Blame:
    kind = kind_of(typ, message)
    if passer is None and no_frames and seen.framework is not None:
        return Blame(
            "caller",
            seen.framework,
            f"{seen.framework} drives vLLM and relays this {kind} from a call it made (no "
            "frame is in view, and no other code is): the values are its own",
        )
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
    if passer.place == "dependency" and passer.package in LOCKSTEP - FRAMEWORKS:
        return Blame(
            "dependency",
            passer.package,
            f"{passer.package}, a vLLM platform plugin, called vLLM with arguments this "
            f"vLLM does not take: the {kind} is about the values its own code passed",
        )
    if passer.place == "dependency":
        return Blame(
            "caller",
            passer.package,
            f"{passer.package} called vLLM with arguments this vLLM does not take "
            f"(the {kind} is about the values it passed)",
        )
    if passer.place == "user":
        framework = framework_of(passer)
        if framework is not None:
            return Blame(
                "caller",
                framework,
                f"{framework}'s code ({short(passer.file)}) passed arguments this vLLM does "
                f"not take (the {kind} is about the values it passed)",
            )
        project = project_of(passer.file)
        return Blame(
            "caller",
            project,
            f"the workload's own script ({short(passer.file)}"
            + (f", {project}'s" if project else "")
            + f") passed arguments this vLLM does not take (the {kind} is about the values "
            "it passed)",
        )
    return Blame("vllm", "vllm", f"vLLM's code passed the values the {kind} is about")


def kind_of(typ: str, message: str = "") -> str:
    validation = typ.endswith("ValidationError") or bool(_ERROR_LIST.match(message))
    return "validation error" if validation else "TypeError"
