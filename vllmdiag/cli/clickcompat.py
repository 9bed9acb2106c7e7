"""The click classes the CLI subclasses or catches, wherever this typer keeps them:
typer 0.2x carries its own copy of click (``typer._click``); older typers use click
itself. Type-checked against the former."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typer._click.core import Context, Parameter
    from typer._click.exceptions import NoSuchOption, UsageError
else:
    try:
        from typer._click.core import Context, Parameter
        from typer._click.exceptions import NoSuchOption, UsageError
    except ImportError:  # an older typer, on click itself
        from click import Context, NoSuchOption, Parameter, UsageError

__all__ = ["Context", "NoSuchOption", "Parameter", "UsageError"]
