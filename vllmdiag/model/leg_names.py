"""The names a leg goes by in a results table's headers: pure."""

from __future__ import annotations

import re


def leg_aliases(leg: str) -> set[str]:
    """The names a ratio header or ``--pair`` may use for a leg: ``0.26`` is also
    ``26``; ``v0.18.0`` is also ``0.18.0``, ``0.18``, ``18.0`` and ``18``."""
    names = {leg}
    core = re.sub(r"^vllm\s*[-_=@ ]?\s*", "", leg, flags=re.I).lstrip("vV")
    for version in {core, re.sub(r"(\.0)+$", "", core) if core.count(".") > 1 else core}:
        names.add(version)
        parts = version.split(".")
        if len(parts) >= 2 and parts[0] == "0":
            names.add(".".join(parts[1:]))
            names.add(parts[1])
    return names
