"""Shared CLI plumbing: consoles, ``--json`` output and error reporting.

Human output goes to stderr when ``--json`` is given, so stdout carries exactly one
JSON object.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from vllmdiag.errors import VllmdiagError

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)

JsonOption = typer.Option(False, "--json", help="Print one JSON object on stdout, nothing else.")


def human(as_json: bool) -> Console:
    """The console for human-readable output: stderr in ``--json`` mode."""
    return stderr if as_json else stdout


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a :class:`VllmdiagError` into a message and exit 1; Ctrl-C into exit 130."""
    try:
        yield
    except VllmdiagError as exc:
        stderr.print(f"[bold red]error:[/] {escape(exc.render())}", highlight=False, markup=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        stderr.print("[yellow]interrupted[/]")
        raise typer.Exit(130) from None
