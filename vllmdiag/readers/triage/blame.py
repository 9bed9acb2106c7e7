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
   frames complete (``request``, ``drift``, ``placement``, ...: see ``rules``);
3. an argument error (a ``TypeError`` about a call's arguments, a pydantic
   ``ValidationError``) blames whoever passed the value: vllmdiag's own probe (``tool``),
   the code outside vLLM that called into it (a framework: ``caller`` + its package; a
   script: ``caller``), or, where the values came in through vLLM's own command line,
   the user's flags (``config``). A validator only carries the check: pydantic is never
   blamed for it. With no passer in view, ``unknown``, unless the installed vLLM's
   version (or the vLLM change that dropped the argument) is in view: then the caller,
   unnamed, passes what this vLLM does not take (see ``arguments``);
4. an attribute a lookup refused (``__getattr__``) is the asker's: see ``lookups``;
5. a message in vLLM's code (or with no frame in view) whose words say what to do, or
   that refuse a setting or name the machine, is read by them (see ``wording``); a
   connection error an HTTP client raised, or the file system refusing to make a
   directory, is read by what failed, not by the library that reported it; a test's
   failed assertion only checks (``unknown``: the code under test is not in view);
6. otherwise the frame that raised (a dispatcher such as ``torch.ops`` only carries the
   call of the op's owner; a stack the paste cut in vLLM's engine layers shows no
   raiser): vLLM's code is ``vllm``, another package's is ``dependency``, a framework's
   or the workload's own script is ``caller`` (see ``parties``); none in view is
   ``unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from vllmdiag.readers.triage.arguments import (
    by_passer,
    is_argument_error,
    kind_of,
    library_drift,
    passer_of,
)
from vllmdiag.readers.triage.lookups import Frame, lookup_blame, only_dispatch, strip_dispatch
from vllmdiag.readers.triage.parties import (
    CARRIERS,
    ORIGINS,
    Blame,
    Origin,
    Seen,
    blame_text,
    by_place,
    frames_of,
    framework_of,
    short,
)
from vllmdiag.readers.triage.rules import RULE, by_rule
from vllmdiag.readers.triage.wording import (
    by_file_system,
    by_test_check,
    by_transport,
    by_words,
)

__all__ = [
    "ORIGINS",
    "RULE",
    "Blame",
    "Origin",
    "Seen",
    "blame_text",
    "decide",
    "is_argument_error",
]

#: vLLM's engine, executor and entry-point layers, and the worker's method dispatch:
#: every failure passes through them on its way up. A stack the paste cut while still
#: in them shows nothing of the code that raised.
_ENGINE_LAYERS = re.compile(
    r"(?:^|/)vllm/(?:v1/)?(?:engine|executor|entrypoints)/"
    r"|(?:^|/)vllm/(?:v1/)?worker/worker_base\.py$"
    r"|(?:^|/)vllm/executor/multiproc_worker_utils\.py$"
)


#: vLLM's model runner re-raising the model's error under ``Error in model execution
#: (input dumped to ..)``: the frame only carries the error.
_RERAISED = re.compile(r"(?:^|/)vllm/worker/model_runner_base\.py$")


#: A message that tells the user to change a setting (vLLM's own checks are worded so):
#: the user's config where vLLM's code raised it.
_SETTING_ADVICE = re.compile(
    r"(?i)\b(?:please|try|consider|you (?:can|could|should|may|must|need to)|make sure"
    r"(?: that)?) (?:to )?(?:set(?:ting)?|us(?:e|ing)|pass(?:ing)?|specify(?:ing)?"
    r"|increas(?:e|ing)|decreas(?:e|ing)|reduc(?:e|ing)|lower(?:ing)?|rais(?:e|ing)"
    r"|enabl(?:e|ing)|disabl(?:e|ing)|add(?:ing)?|remov(?:e|ing)|chang(?:e|ing)"
    r"|adjust(?:ing)?|provid(?:e|ing)|choos(?:e|ing)|select(?:ing)?|run(?:ning)? with)\b"
)


#: An imperative sentence naming the flag or argument to change (``Set the
#: `--num_processes` argument to a value lower ..``).
_IMPERATIVE_SETTING = re.compile(
    r"(?:^|[.!?:]\s+)(?:Set|Increase|Decrease|Reduce|Lower|Raise|Pass|Specify|Enable"
    r"|Disable)\s+(?:the\s+)?(?:`[^`]+`|--?[A-Za-z][\w-]*|[A-Za-z_]+=\S+)"
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


#: One of vLLM's public API objects lacking an attribute a caller asked for
#: (``'ServingEmbedding' object has no attribute 'create_embedding'``).
_VLLM_API_ASKED = re.compile(
    r"^'(?P<cls>(?:OpenAI)?Serving\w+|LLM|LLMEngine|AsyncLLMEngine|AsyncLLM|SamplingParams"
    r"|EngineArgs|AsyncEngineArgs)' object has no attribute '(?P<attr>\w+)'"
)


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
    cut_stack: bool = False,
) -> Blame:
    """Whose fault the failure is. ``files`` (and ``funcs``, their functions): the
    frames, outermost first (``cut_stack``: a stack the paste cut before the frame that
    raised); ``rule``/``rule_why``: the catalogue entry's ``blame`` and
    ``why``; ``where``: the place a death line's reader gave (who printed it, or its
    stack's innermost frame); ``seen``: what else the log shows."""
    seen = seen or Seen(wrapper=wrapper, tool_dirs=tuple(tool_dirs))
    dirs = tuple(tool_dirs) or seen.tool_dirs
    frames = frames_of(files, funcs, dirs)
    passed_through = cut_stack and bool(frames) and _ENGINE_LAYERS.search(_norm(frames[-1].file))
    if passed_through:
        frames = []  # the stack stops where every failure passes: the raiser is below it
    if not frames and where is not None and where[0] in ("vllm", "dependency", "user", "tool"):
        frames = [Frame(where[0], where[1], "", "")]  # type: ignore[arg-type]
    raiser = frames[-1] if frames else None
    if raiser is not None and raiser.place == "tool":
        at = f" ({short(raiser.file)})" if raiser.file else ""
        return Blame("tool", "vllmdiag", f"raised in vllmdiag's own code{at}")
    if rule and rule != "frames":
        return by_rule(rule, rule_why, frames, seen, message)
    argument = is_argument_error(typ, message)
    if argument:
        frames = strip_dispatch(frames)  # ``Function.apply`` only carries the call
    drift = library_drift(typ, message, frames) if argument else None
    if drift is not None:
        return drift
    passer = passer_of(frames) if argument else None
    if isinstance(passer, Frame) and passer.place == "tool":
        return Blame(
            "tool",
            "vllmdiag",
            f"vllmdiag's own code ({short(passer.file)}) passed the arguments "
            f"the {kind_of(typ, message)} is about",
        )
    if argument:
        return by_passer(typ, passer, seen, not frames, message)
    made = by_file_system(typ, message, funcs)
    if made is not None:
        return made
    looked = lookup_blame(typ, message, frames)
    if looked is not None:
        origin, package, why = looked
        if origin == "asker":
            frames = list(frames[: len(frames) - int(package or 0)])
        else:
            return Blame(origin, package, why)  # type: ignore[arg-type]
    if only_dispatch(frames):
        return Blame(
            "unknown",
            None,
            "only torch's dispatcher is in view (it looks an operator up for the code that "
            "called it): the code that asked for the operator is not in view",
        )
    frames = strip_dispatch(frames)
    raiser = frames[-1] if frames else None
    if raiser is not None and _RERAISED.search(_norm(raiser.file)) and raiser.func == "_wrapper":
        return Blame(
            "unknown",
            None,
            "vLLM's model runner re-raised the model's error with its input dumped "
            "(model_runner_base._wrapper): the frames of the error itself are not in view",
        )
    if raiser is None and seen.framework is not None:
        asked = _VLLM_API_ASKED.match(message)
        if asked is not None:
            return Blame(
                "caller",
                seen.framework,
                f"{seen.framework} drives vLLM and asked vLLM's {asked['cls']} for "
                f"'{asked['attr']}', which the installed vLLM does not have (no other code is "
                "in view): it must follow the installed API",
            )
    advised = _by_advice(message, raiser)
    if advised is not None:
        return advised
    declined = _declined(typ, message, frames)
    if declined is not None:
        return declined
    worded = (
        by_transport(typ, raiser, message)
        or by_words(message, raiser)
        or by_test_check(typ, raiser)
    )
    if worded is not None:
        return worded
    if raiser is not None:
        return by_place(raiser, rule_why)
    if passed_through:
        return Blame(
            "unknown",
            None,
            "the paste cut the stack in vLLM's engine start-up or dispatch, which every "
            "failure passes through, above the code that raised: who must act is not in view",
        )
    return Blame(
        "unknown",
        None,
        "no frame of the failing code is in view and the message does not say whose it is",
    )


def _declined(typ: str, message: str, frames: list[Frame]) -> Blame | None:
    """A bare ``NotImplementedError`` raised in vLLM's code for a call a framework made
    (V0's engine declining ``collective_rpc``): vLLM says it does not offer that, so the
    framework that asked for it must use what the engine it runs offers."""
    if typ.rsplit(".", 1)[-1] != "NotImplementedError" or message.strip() or len(frames) < 2:
        return None
    if frames[-1].place != "vllm":
        return None
    outside = [f for f in frames if f.place != "vllm" and f.package not in CARRIERS]
    if not outside or outside[-1].place not in ("dependency", "user"):
        return None
    asker = outside[-1]
    package = framework_of(asker) if asker.place == "user" else asker.package
    return Blame(
        "caller",
        package,
        f"vLLM declines the call {package or 'the code driving it'} made (a bare "
        "NotImplementedError in vLLM's code): the caller must use what the installed engine "
        "offers",
    )


def _norm(path: str) -> str:
    return path.replace("\\", "/")


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
    if raiser is not None and raiser.place != "vllm":
        return None
    if _SETTING_ADVICE.search(advice) or _IMPERATIVE_SETTING.search(advice):
        return Blame(
            "config",
            None,
            "vLLM's own check says which setting to change: the user's settings, not a "
            "defect in vLLM"
            if raiser is not None
            else "the check's message says which setting to change: the user's settings",
        )
    return None
