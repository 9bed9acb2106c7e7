"""Stdlib-only scripts that a leg's own python runs; vllmdiag never imports them.

Each prints one JSON object on stdout. :func:`script` gives the path to pass to python.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def script(name: str) -> Path:
    return _HERE / f"{name}.py"
