"""Groups whose main form has no command word: ``vllmdiag study RECIPE`` and
``vllmdiag profile RECIPE`` run a hidden ``run`` command. Its usage line names the form
a user types (``vllmdiag study [OPTIONS] RECIPE``, never ``study run``), and the group's
``--help`` shows that form's arguments and options after its own commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.core import TyperCommand, TyperGroup

from vllmdiag.cli.clickcompat import UsageError

#: The name of the hidden command that is a group's main form.
MAIN = "run"


class MainForm(TyperCommand):
    """The hidden ``run`` command: its usage is its group's path, without ``run``."""

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        path = ctx.parent.command_path if ctx.parent is not None else ctx.command_path
        formatter.write_usage(path, " ".join(self.collect_usage_pieces(ctx)))


class FormGroup(TyperGroup):
    """A group with a main form: ``--help`` prints the group, then the main form."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.subcommand_metavar = "RECIPE | COMMAND [ARGS]..."

    def format_help(self, ctx: Any, formatter: Any) -> None:
        super().format_help(ctx, formatter)
        main = self.commands.get(MAIN)
        if main is None:
            return
        sub = main.make_context(MAIN, [], parent=ctx, resilient_parsing=True)
        main.format_help(sub, formatter)


# --resume: ``matrix`` and ``profile`` take the run directory (``--resume DIR``), ``study``
# takes a flag with ``--out DIR``. Each accepts the other's form too.


def _value_of(args: list[str], flag: str) -> tuple[int, int, str] | None:
    """(start, end, value) of ``flag VALUE`` or ``flag=VALUE`` in ``args``."""
    for i, arg in enumerate(args):
        if arg == "--":
            return None
        if arg == flag and i + 1 < len(args):
            return i, i + 2, args[i + 1]
        if arg.startswith(flag + "="):
            return i, i + 1, arg[len(flag) + 1 :]
    return None


def resume_dir_form(args: list[str]) -> list[str]:
    """``--out DIR --resume`` (the study's form) as ``--resume DIR``."""
    if "--resume" not in args:
        return args
    at = args.index("--resume")
    nxt = args[at + 1] if at + 1 < len(args) else None
    if nxt is not None and not nxt.startswith("-"):
        return args
    out = _value_of(args, "--out")
    if out is None:
        raise UsageError("--resume needs the run directory: --resume DIR (or --out DIR --resume)")
    start, end, value = out
    rest = [a for i, a in enumerate(args) if not start <= i < end]
    at = rest.index("--resume")
    return [*rest[: at + 1], value, *rest[at + 1 :]]


def resume_flag_form(args: list[str]) -> list[str]:
    """``--resume DIR`` (the matrix's form) as ``--out DIR --resume``, where DIR is an
    existing directory (a recipe file after ``--resume`` stays the recipe)."""
    if "--resume" not in args:
        return args
    at = args.index("--resume")
    nxt = args[at + 1] if at + 1 < len(args) else None
    if nxt is None or nxt.startswith("-") or not Path(nxt).is_dir():
        return args
    out = _value_of(args, "--out")
    if out is not None and Path(out[2]) != Path(nxt):
        raise UsageError(
            f"--resume {nxt} and --out {out[2]} name two directories: give one of them"
        )
    rest = [a for i, a in enumerate(args) if i != at + 1]
    return rest if out is not None else [*rest, "--out", nxt]


class ResumeDir(TyperCommand):
    """A command whose ``--resume`` takes DIR, accepting ``--out DIR --resume`` too."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, resume_dir_form(list(args)))


class ResumeDirForm(MainForm, ResumeDir):
    """``profile RECIPE``: a main form whose ``--resume`` takes DIR."""


class ResumeFlagForm(MainForm):
    """``study RECIPE``: a main form whose ``--resume`` is a flag, accepting
    ``--resume DIR`` too."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, resume_flag_form(list(args)))
