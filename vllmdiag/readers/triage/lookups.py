"""Frames that only carry a call for the code above them (pure).

Two kinds raise an error that is not theirs:

- an attribute lookup (``__getattr__``): torch's ``Module.__getattr__`` raises the
  ``AttributeError`` of whoever asked one of its subclasses (a vLLM layer) for an
  attribute it never registered; another library's lookup (transformers' tokenizer and
  config) refuses an attribute its installed release does not have, which the code
  asking for it expected: the installed versions do not go together;
- one of vLLM's engine classes lacking a private attribute (``'_AsyncLLMEngine' object
  has no attribute '_process_worker_outputs'``): only its own code asks for a private
  name, so vLLM asked, even where no frame is in view;
- a dispatcher: ``torch.ops.<namespace>.<op>(...)`` runs the op of the library that
  registered it (vLLM's ``_C``, a kernel package), through ``torch/_ops.py``; the frame
  above it is the op's owner.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from vllmdiag.readers.triage.origin import Place

_LOOKUP_FUNCS = frozenset({"__getattr__", "__getattribute__"})
_TORCH_MODULE = re.compile(r"torch/nn/modules/module\.py$")
_DISPATCH = re.compile(r"torch/(?:_ops\.py|_library/[\w/]+\.py|autograd/function\.py)$")
#: vLLM's own layer classes (torch modules): an attribute one lacks was asked for by
#: vLLM's model or weight-loading code.
_VLLM_LAYER = re.compile(
    r"^'(?P<cls>\w*Parallel(?:Linear|Embedding|LMHead)|\w*FusedMoE\w*|LinearBase"
    r"|VocabParallelEmbedding|ParallelLMHead|\w+LinearMethod)' object has no attribute"
)
_ATTR = re.compile(r"has no attribute '?(?P<attr>\w+)")
#: One of vLLM's engine or runner classes lacking a private attribute: only the class's
#: own code asks for a private name, so the asker is vLLM even with no frame in view.
_VLLM_PRIVATE = re.compile(
    r"^'(?P<cls>_?(?:Async)?LLMEngine|_AsyncLLMEngine|MQLLMEngine|AsyncLLM|EngineCore\w*"
    r"|\w*ModelRunner\w*|VllmConfig|Scheduler)' object has no attribute '(?P<attr>_\w+)'"
)


#: One of vLLM's internal classes (attention metadata, runners, workers, scheduler
#: output, the forward context and its data-parallel metadata, its own tokenizer
#: wrappers) lacking an attribute: only vLLM's code (or the
#: platform plugin that subclasses it) asks for one, so the asker is vLLM even with no
#: frame in view.
_VLLM_INTERNAL = re.compile(
    r"^'(?P<cls>\w*(?:AttentionMetadata(?:Builder)?|AttentionImpl|AttentionBackend"
    r"|ModelRunner\w*|ModelInput\w*|WorkerWrapper\w*|SchedulerOutput|InputBatch"
    r"|KVCacheManager|KVCacheCoordinator|DPMetadata|ForwardContext)|MistralTokenizer"
    r"|TokenizerGroup|(?:Vllm|Model|Cache|Parallel|Scheduler|Device|Load|Speculative"
    r"|Compilation|KVTransfer|LoRA|StructuredOutputs|Observability)Config|\w*Proposer"
    r"|Eagle\w*ForCausalLM)' object has no "
    r"attribute '(?P<attr>\w+)'"
)
#: One of a vLLM platform plugin's own classes (vllm-ascend names its ops and layers
#: ``Ascend*``: ``AscendRotaryEmbedding``; vllm-gaudi ``HPU*``: ``HPUMLAImpl``) lacking an
#: attribute: only the plugin's code asks its own classes, so the asker is the plugin even
#: with no frame of it in view.
_PLUGIN_CLASS = re.compile(
    r"^'(?P<cls>(?P<prefix>Ascend|HPU)[A-Z]\w*)' object has no attribute '(?P<attr>\w+)'"
)
_PLUGIN_OF_PREFIX = {"Ascend": "vllm-ascend", "HPU": "vllm-gaudi"}
#: A library's processor or tokenizer (transformers') lacking what vLLM's code reads
#: from it: the installed release of that library is not the one this vLLM expects.
#: vLLM's own tokenizer classes are not a library's.
_LIBRARY_OBJECT = re.compile(
    r"^'(?P<cls>(?!MistralTokenizer'|\w*TokenizerGroup'|TokenizerBase')"
    r"\w*(?:Processor|Tokenizer|TokenizerFast|FeatureExtractor|ImageProcessor\w*))' object "
    r"has no attribute '(?P<attr>\w+)'"
)


@dataclass(frozen=True)
class Frame:
    """One frame as blame reads it: where it lies, its package, file and function."""

    place: Place
    package: str | None
    file: str
    func: str


def _norm(path: str) -> str:
    return path.replace("\\", "/")


def _is_lookup(frame: Frame) -> bool:
    if _TORCH_MODULE.search(_norm(frame.file)):
        return True
    return frame.place == "dependency" and frame.func in _LOOKUP_FUNCS


def lookup_blame(
    typ: str, message: str, frames: Sequence[Frame]
) -> tuple[str, str | None, str] | None:
    """For an ``AttributeError`` a lookup raised: (origin, package, why), or
    ``("asker", "<n>", "")`` where the ``n`` innermost frames are the lookup's and the
    asker above them decides; None where no lookup raised it."""
    if not typ.rsplit(".", 1)[-1].endswith("AttributeError"):
        return None
    if not frames:
        private = _VLLM_PRIVATE.match(message)
        if private is not None:
            return (
                "vllm",
                "vllm",
                f"vLLM's own {private['cls']} lacks '{private['attr']}', a private name only "
                "its own code asks for",
            )
        internal = _VLLM_INTERNAL.match(message)
        if internal is not None:
            return (
                "vllm",
                "vllm",
                f"{internal['cls']} is one of vLLM's internal classes (or its platform "
                f"plugin's), and only their own code asks it for '{internal['attr']}'",
            )
        return _plugin_class(message)
    library = _LIBRARY_OBJECT.match(message)
    if library is not None and frames[-1].place == "vllm":
        return (
            "environment",
            None,
            f"vLLM's code asked {library['cls']} (a library's processor or tokenizer) for "
            f"'{library['attr']}', which the installed release of that library does not have: "
            "the installed versions do not go together",
        )
    n = 0
    while n < len(frames) and _is_lookup(frames[len(frames) - 1 - n]):
        n += 1
    if n == 0:
        return None
    lookup = frames[-1]
    rest = frames[: len(frames) - n]
    attr = _ATTR.search(message)
    what = f"'{attr['attr']}'" if attr else "an attribute"
    if _TORCH_MODULE.search(_norm(lookup.file)):
        if rest:
            return ("asker", str(n), "")
        layer = _VLLM_LAYER.match(message)
        if layer:
            return (
                "vllm",
                "vllm",
                f"vLLM's code asked its own layer ({layer['cls']}) for {what}, which it never "
                "registered (torch's attribute lookup only raised it)",
            )
        return _plugin_class(message) or (
            "unknown",
            None,
            "torch's attribute lookup raised it for the code that asked, which is not in view",
        )
    owner = lookup.package or "a library"
    if rest:
        asker = rest[-1]
        if asker.place == "dependency" and asker.package == lookup.package:
            return ("asker", str(n), "")  # the library asked its own object: its defect
        if asker.place in ("vllm", "dependency"):
            who = "vLLM" if asker.place == "vllm" else (asker.package or "a library")
            return (
                "environment",
                None,
                f"{who} asked {owner}'s object for {what}, which the installed {owner} does "
                f"not have: the installed versions of {who} and {owner} do not go together",
            )
        return ("asker", str(n), "")  # a framework or script asked: its frame decides
    return (
        "unknown",
        None,
        f"{owner}'s lookup refused {what}, and the code that asked for it is not in view: "
        f"whether that code or the installed {owner} must change is not shown",
    )


def only_dispatch(frames: Sequence[Frame]) -> bool:
    """Every frame in view is a dispatcher's (``torch/_ops.py`` looking an op up): the
    code that called it is not in view."""
    return bool(frames) and all(_DISPATCH.search(_norm(f.file)) for f in frames)


def strip_dispatch(frames: Sequence[Frame]) -> list[Frame]:
    """``frames`` without the innermost dispatcher frames (``torch/_ops.py``) where a
    frame that called the op is above them."""
    out = list(frames)
    n = len(out)
    while n > 1 and _DISPATCH.search(_norm(out[n - 1].file)):
        n -= 1
    if n < len(out) and not _DISPATCH.search(_norm(out[n - 1].file)):
        return out[:n]
    return out


def _plugin_class(message: str) -> tuple[str, str | None, str] | None:
    """(origin, package, why) where the class lacking the attribute is a vLLM platform
    plugin's own, whose own code is the only one to ask it; else None."""
    plugin = _PLUGIN_CLASS.match(message)
    if plugin is None:
        return None
    package = _PLUGIN_OF_PREFIX[plugin["prefix"]]
    return (
        "dependency",
        package,
        f"{plugin['cls']} is one of {package}'s own classes, and only {package}'s code asks "
        f"it for '{plugin['attr']}'",
    )
