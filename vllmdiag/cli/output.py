"""Shared CLI plumbing: consoles, ``--json`` output and error reporting.

Human output goes to stderr when ``--json`` is given, so stdout carries exactly one
JSON object: the command's result, or ``{"error", "where", "hint"}`` when it failed.
Everything printed goes through :mod:`vllmdiag.services.redact` (no secret reaches a terminal
or a captured log), and text that came from logs, recipes or users is escaped before
Rich sees it (see :func:`lit`); its control characters are printed as escapes
(:func:`vllmdiag.printable.printable`, applied by a render hook to every segment of text
these consoles print: Rich's own styling and cursor control are not text, and pass).
"""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import typer
from rich.console import Console, ConsoleOptions, RenderableType, RenderHook, RenderResult
from rich.markup import escape
from rich.segment import Segment
from rich.text import Text

from vllmdiag.errors import ConfigError, VllmdiagError
from vllmdiag.printable import printable
from vllmdiag.services import redact


class _Redacting:
    """A text stream that masks secrets on the way to ``sys.stdout``/``sys.stderr``
    (looked up at each write, so a test runner's capture is honoured)."""

    def __init__(self, target: Callable[[], IO[str]]) -> None:
        self._target = target

    def write(self, text: str) -> int:
        self._target().write(redact.text(text))
        return len(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return self._target().isatty()

    def fileno(self) -> int:
        return self._target().fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._target(), "encoding", "utf-8") or "utf-8"


class _Printable:
    """A renderable whose text segments have their control characters escaped."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for seg in console.render(self.inner, options):
            if seg.control or not seg.text:
                yield seg
            else:
                yield Segment(printable(seg.text), seg.style)


class _PrintableHook(RenderHook):
    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        return [_Printable(r) for r in renderables]


def _console(target: Callable[[], IO[str]]) -> Console:
    console = Console(file=_Redacting(target), soft_wrap=True)  # type: ignore[arg-type]
    console.push_render_hook(_PrintableHook())
    return console


stdout = _console(lambda: sys.stdout)
stderr = _console(lambda: sys.stderr)


class _Mode:
    """Whether the command being run was given ``--json`` (set while its options are
    parsed, so that an error reported from anywhere in it takes the same form)."""

    json = False


def set_json_mode(value: bool) -> bool:
    _Mode.json = bool(value)
    return value


JsonOption = typer.Option(
    False,
    "--json",
    help="Print one JSON object on stdout, nothing else (an error too).",
    callback=set_json_mode,
)


def lit(value: object) -> str:
    """``value`` as literal text inside a markup string: ``[bold]`` stays ``[bold]``."""
    return escape(str(value))


def plain(value: object, style: str = "") -> Text:
    """``value`` as a Rich Text: never parsed as markup, never highlighted."""
    return Text(str(value), style=style)


def human(as_json: bool) -> Console:
    """The console for human-readable output: stderr in ``--json`` mode."""
    return stderr if as_json else stdout


def warn_lines(console: Console, lines: Iterable[str]) -> None:
    """Warnings, one a line (text from recipes and logs: never markup)."""
    for line in lines:
        console.print(Text("warning: ", style="yellow").append(line), highlight=False)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(redact.data(obj), indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def json_mode() -> bool:
    return _Mode.json


def report_error(
    message: str, *, where: str | None, hint: str | None, as_json: bool, show: bool = True
) -> None:
    """One error, for people on stderr and, with ``--json``, as an object on stdout."""
    if show:
        head = f"{where}: {message}" if where else message
        text = Text("error: ", style="bold red")
        text.append(head)
        if hint:
            text.append(f"\n  hint: {hint}")
        stderr.print(text, highlight=False)
    if as_json:
        emit_json({"error": message, "where": where, "hint": hint})


#: What the system says about a path a user named, and what to do next. The reading code
#: checks kinds and sizes; these come from the path itself (pathlib's checks raise them).
_PATH_ERRNOS = {
    errno.ELOOP: "the path goes through a symbolic link that points to itself: fix the link",
    errno.EACCES: "give a path you may read (and, for an output, write)",
    errno.EPERM: "give a path you may read (and, for an output, write)",
    errno.EROFS: "the place is read-only: give a writable directory",
    errno.EIO: "the system could not read it: give a regular file",
    errno.ENOSPC: "the disk is full: free space or give another place",
    errno.EDQUOT: "the disk quota is spent: free space or give another place",
    errno.ENXIO: "give a regular file",
}


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a :class:`VllmdiagError` into a message and exit 1; Ctrl-C into exit 130."""
    try:
        yield
    except VllmdiagError as exc:
        report_error(exc.message, where=exc.where, hint=exc.hint, as_json=json_mode())
        raise typer.Exit(1) from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            # a path the user gave that no system call can look up, wherever it is first met
            err = ConfigError(
                "a path is too long for this system (a name in it over 255 bytes, or the "
                "whole over 4,096)",
                where=str(exc.filename)[:300] if exc.filename else None,
                hint="check the path (a pasted line, or a variable expanded twice?)",
            )
            report_error(err.message, where=err.where, hint=err.hint, as_json=json_mode())
            raise typer.Exit(1) from None
        if exc.errno not in _PATH_ERRNOS or exc.filename is None:
            raise  # not about a path the user named: a bug, with its traceback
        report_error(
            exc.strerror or str(exc),
            where=printable(str(exc.filename)),
            hint=_PATH_ERRNOS[exc.errno],
            as_json=json_mode(),
        )
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        if json_mode():
            emit_json({"error": "interrupted", "where": None, "hint": None})
        stderr.print("[yellow]interrupted[/]")
        raise typer.Exit(130) from None
