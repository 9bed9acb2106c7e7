"""Programs that build vLLM's command line for the user (pure).

A wrapper such as ramalama runs ``vllm serve`` (or vLLM's API server module) with
arguments it chose; when vLLM refuses one of them (``vllm: error: unrecognized
arguments``), the wrapper passed it, not the user and not vLLM. Such a wrapper names
itself in the log (the command it prints before running it, its container's label), and
those lines are what is looked for here.
"""

from __future__ import annotations

import re

#: Each wrapper by the text its own lines carry.
WRAPPERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ramalama", re.compile(r"\bramalama\b|\bRAMALAMA\b|ramalama_\w+", re.IGNORECASE)),
)
#: Literals the log reader searches every block for, so those lines reach the watch.
LITERALS: tuple[bytes, ...] = (b"amalama", b"AMALAMA")


def wrapper_in(text: str) -> str | None:
    """The wrapper a line shows running vLLM's command, or None."""
    for name, pattern in WRAPPERS:
        if pattern.search(text):
            return name
    return None


#: Projects that drive vLLM (serving stacks, trainers, proxies, evaluators): their code
#: calls vLLM, vLLM does not use it. An exception raised in one of them is that caller's
#: to fix, not a dependency's. Keyed by the name their package or checkout folder has.
FRAMEWORKS: frozenset[str] = frozenset(
    {
        "litellm",
        "sglang",
        "openrlhf",
        "trl",
        "verl",
        "llamafactory",
        "xinference",
        "gpustack",
        "ragflow",
        "lighteval",
        "lm_eval",
        "swift",
        "easyr1",
        "lmms_eval",
        "langchain",
        "langchain_community",
        "llama_index",
        "dynamo",
        "kserve",
        "ramalama",
    }
)


def framework_in(path: str) -> str | None:
    """The framework whose checkout a frame's path lies in (``.../sglang/python/sglang/
    srt/x.py``: sglang), or None."""
    parts = [p for p in path.replace("\\", "/").split("/") if p][:-1]
    for part in reversed(parts):
        if part in FRAMEWORKS:
            return part
    return None
