"""Parsers for option values that typer's own types take too readily: an empty path
(``--out ""``) is the current directory to ``Path``, and a run into it would scatter
files where the user stands."""

from __future__ import annotations

from pathlib import Path

import typer


def path_value(value: str | Path) -> Path:
    """A path option's value: any path but the empty one."""
    if isinstance(value, Path):  # a default
        return value
    if not value.strip():
        raise typer.BadParameter(
            "the path is empty (a quoted variable that was not set?): give a directory or file"
        )
    return Path(value)
