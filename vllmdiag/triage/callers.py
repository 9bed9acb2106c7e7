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
