"""``--help`` in the conventions of command-line tools: ``--out DIR``, ``--grace SECONDS``,
flags without a value type, arguments in capitals; not ``<bool>`` or ``<list[str]>``.

The root group tidies every command below it once, when typer builds the click tree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typer.core import TyperGroup

#: typer's type label → the metavar shown for an option.
_METAVAR = {
    "path": "PATH",
    "str": "TEXT",
    "float": "NUMBER",
    "int": "INTEGER",
    "int range": "INTEGER",
    "float range": "NUMBER",
    "bool": "",
}


class TidyGroup(TyperGroup):
    """The root group: tidies the help of every command and sub-group below it."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        tidy(self)


def tidy(command: Any) -> None:
    for attr in ("help", "short_help"):  # docstrings' ``code`` is literal text in a terminal
        text = getattr(command, attr, None)
        if isinstance(text, str) and "``" in text:
            setattr(command, attr, text.replace("``", ""))
    for param in getattr(command, "params", []):
        _tidy_param(param)
    _wrap_help_option(command)
    for sub in getattr(command, "commands", {}).values():
        tidy(sub)


def _tidy_param(param: Any) -> None:
    if hasattr(param, "is_flag"):  # an option
        if param.is_flag or getattr(param, "count", False) or param.metavar is not None:
            label = "" if param.metavar is None else str(param.metavar)
            param.display_type_rich = lambda ctx=None: label
            return
        original = getattr(param, "display_type_rich", None)
        if original is None:  # a typer without this hook: its own help stays as it is
            return
        param.display_type_rich = lambda ctx=None: metavar(original(ctx=ctx))
        return
    # an argument: its name says what it is (the type column would say <path>)
    if param.metavar is None and param.name:
        param.metavar = param.name.upper()
    param.display_type_rich = lambda ctx=None: None
    if hasattr(param, "_usage_display_name"):  # usage: RECIPE and [B], never {RECIPE}
        param._usage_display_name = lambda p=param: _usage_name(p)


def _usage_name(param: Any) -> str:
    name = str(param.metavar or param.name or "").upper()
    name = name if param.required else f"[{name}]"
    return name + ("..." if param.nargs != 1 else "")


def metavar(label: str | None) -> str:
    """``<path>`` → ``PATH``, ``<list[str]>`` → ``TEXT``, ``<a|b>`` → ``[a|b]``."""
    inner = (label or "").strip().removeprefix("<").removesuffix(">")
    dots = "..." if inner.endswith("...") else ""
    inner = inner.removesuffix("...").removesuffix(">")
    if inner.startswith("list[") and inner.endswith("]"):
        inner = inner[5:-1]
    if "|" in inner:
        return f"[{inner}]{dots}"
    return _METAVAR.get(inner, inner.upper()) + dots


def _wrap_help_option(command: Any) -> None:
    original: Callable[..., Any] | None = getattr(command, "get_help_option", None)
    if original is None or getattr(original, "_tidied", False):
        return

    def get_help_option(ctx: Any) -> Any:
        option = original(ctx)
        if option is not None:
            option.metavar = ""
        return option

    get_help_option._tidied = True  # type: ignore[attr-defined]
    command.get_help_option = get_help_option
