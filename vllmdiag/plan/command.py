"""The one renderer of a cell's command: (workload, flags, the cell's environment
overlay, the leg as it is seen) → the argv and environment overlay that run. The run,
``matrix --dry-run``, ``study --dry-run``, a study's settings and profile all render
through :func:`render`; :func:`shell_line` prints one as a single pasteable line.

A leg is seen as what is known of it: its interpreter (the real one of a ``path:`` leg,
the built venv's of a uv leg, or :data:`UNBUILT_PYTHON` before it exists) and how its
vLLM spells the built-ins' flags (None: not yet known, the current spelling is shown).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.model.arms import Flag
from vllmdiag.model.recipe import WorkloadConfig
from vllmdiag.plan import bench_command as benchmod
from vllmdiag.plan import workloads as wlmod
from vllmdiag.services import redact

#: The interpreter of a uv leg that is not built yet.
UNBUILT_PYTHON = "<leg venv>/bin/python"
#: What :attr:`CellCommand.unknown` names.
UNKNOWN_PYTHON = "interpreter (the leg is not built yet)"
UNKNOWN_SPELLING = "vLLM's flag spelling (read from the leg once it is built)"


@dataclass(frozen=True)
class LegSeen:
    """A leg as the command sees it. ``python``: its interpreter (or a placeholder);
    ``version``: its Python X.Y.Z (None: not known yet); ``dialect``: its vLLM's
    spelling of the built-ins' flags (None: not known yet); ``python_unknown``: why the
    interpreter is not known yet (empty: it is)."""

    python: str
    version: str | None = None
    dialect: wlmod.BenchDialect | None = wlmod.CURRENT
    python_unknown: str = ""


@dataclass(frozen=True)
class CellCommand:
    """What runs: ``argv`` and the environment overlay the recipe gives the cell (on top
    of the leg's PATH and VIRTUAL_ENV); ``unknown``: the parts a plan cannot know yet."""

    argv: tuple[str, ...]
    env: dict[str, str]
    unknown: tuple[str, ...] = ()


def needs_dialect(wl: WorkloadConfig) -> bool:
    """Whether the workload's command depends on the leg's vLLM spelling of flags."""
    return wl.builtin is not None or benchmod.bench_kind(wlmod.template(wl)) is not None


def render(
    wl: WorkloadConfig,
    *,
    name: str,
    flags: Sequence[Flag],
    env: Mapping[str, str],
    out_dir: Path | str,
    recipe_dir: Path | str,
    leg: LegSeen,
) -> CellCommand:
    """The cell's command (a bad template is a :class:`~vllmdiag.errors.ConfigError`)."""
    dialect = leg.dialect if leg.dialect is not None else wlmod.CURRENT
    argv = wlmod.render(
        wl,
        name=name,
        flags=flags,
        out_dir=Path(out_dir),
        recipe_dir=Path(recipe_dir),
        python=Path(leg.python),
        dialect=dialect,
    )
    unknown: list[str] = []
    if leg.python_unknown and leg.python in argv:
        unknown.append(leg.python_unknown)
    if leg.dialect is None and needs_dialect(wl):
        unknown.append(UNKNOWN_SPELLING)
    return CellCommand(tuple(argv), dict(env), tuple(unknown))


def check(wl: WorkloadConfig, *, name: str, flags: Sequence[Flag], recipe_dir: Path | str) -> None:
    """The workload renders with these flags (before anything is built or run)."""
    render(
        wl,
        name=name,
        flags=flags,
        env={},
        out_dir="{out_dir}",
        recipe_dir=recipe_dir,
        leg=LegSeen("{python}"),
    )


def shown(cmd: CellCommand) -> CellCommand:
    """``cmd`` as it may be shown or stored: secrets masked as ``***``."""
    return CellCommand(tuple(redact.argv(cmd.argv)), redact.env(cmd.env), cmd.unknown)


_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shell_word(text: str) -> str:
    """``text`` as one shell word: ``shlex.quote``, or bash's ``$'...'`` where it holds a
    control character (never raw on the line)."""
    if text.isprintable():
        return shlex.quote(text)
    out = []
    for ch in text:
        if ch == "\\" or ch == "'":
            out.append("\\" + ch)
        elif ch in _NAMED:
            out.append(_NAMED[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return "$'" + "".join(out) + "'"


def assignment(name: str, value: str) -> str:
    """``NAME='value'``, safe to paste: a name a shell cannot assign is quoted whole (as
    ``env`` takes it), never left to run as a command."""
    if name.isidentifier() and name.isascii():
        return f"{name}={shell_word(value)}"
    return shell_word(f"{name}={value}")


def command_words(argv: Sequence[str]) -> str:
    """The command part of a shown line: every word quoted (``shlex.join`` where no word
    holds a control character)."""
    return " ".join(shell_word(a) for a in argv)


def shell_line(cmd: CellCommand) -> str:
    """One pasteable line: the overlay as assignments in front of the command, secrets
    masked. A name a shell cannot assign sends the line through ``env``."""
    safe = shown(cmd)
    words = command_words(safe.argv)
    if not safe.env:
        return words
    names_ok = all(k.isidentifier() and k.isascii() for k in safe.env)
    env = " ".join(assignment(k, v) for k, v in safe.env.items())
    return f"{env} {words}" if names_ok else f"env {env} {words}"
