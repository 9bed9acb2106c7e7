"""A leg's record as a run directory keeps it (``envs/<key>.json``), read back."""

from __future__ import annotations

from typing import Any

from vllmdiag import codec
from vllmdiag.model.stack import DISTRIBUTIONS, EnvRecord, StackInfo


def env_record(data: Any) -> EnvRecord:
    """A leg record; schema 1 kept the stack under distribution names."""
    stack = data.get("stack") if isinstance(data, dict) else None
    if isinstance(stack, dict) and set(stack) & set(DISTRIBUTIONS) - {"vllm", "torch"}:
        data = {**data, "stack": codec.dump(StackInfo.from_probe(stack))}
    return codec.load(EnvRecord, data)
