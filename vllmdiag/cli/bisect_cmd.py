"""CLI: ``vllmdiag bisect PKG --good V --bad V -- CMD...``."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from vllmdiag import codec
from vllmdiag.cli.bisect_commits_view import commit_view, render_commits
from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors
from vllmdiag.cli.window_cmd import Command, Context, NoSuchOption, UsageError
from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note
from vllmdiag.jobs.bisect import (
    BisectEvent,
    BisectRequest,
    BisectResult,
    StepFinished,
    StepStarted,
    StepVerdict,
    bisect_releases,
)
from vllmdiag.jobs.bisect.by_commit import bisect_commits

_STYLE = {StepVerdict.GOOD: "green", StepVerdict.BAD: "red", StepVerdict.SKIP: "yellow"}
_AFTER_DASHES = (
    "put the check after --, e.g. vllmdiag bisect PKG --good V --bad V -- "
    "python -c 'import pkg.mod as m; m.Name'"
)


class BisectCommand(Command):
    """The check goes after ``--``: without it, the check's own options would be read as
    bisect's (``-c`` an unknown option, ``--json`` taken by vllmdiag)."""

    hints: ClassVar[dict[str, str]] = {
        "--good": "e.g. --good 4.5.3 (a release that checks good)",
        "--bad": "e.g. --bad 4.8.1 (a release that checks bad)",
        "PKG": "e.g. vllmdiag bisect nvidia-cutlass-dsl --good 4.5.3 --bad 4.8.1 -- CMD...",
    }

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        given = list(args)  # click consumes ``args`` as it parses
        dashes = "--" in given
        try:
            rest = super(Command, self).parse_args(ctx, args)
        except UsageError as exc:
            with user_errors():
                if not dashes and isinstance(exc, NoSuchOption):
                    message = exc.format_message().rstrip(".")
                    raise VllmdiagError(
                        f"{message[:1].lower() + message[1:]}: the check command goes after --",
                        hint=_AFTER_DASHES,
                    ) from None
                raise self.usage_error(exc) from None
        if dashes and ctx.params.get("pkg") not in given[: given.index("--")]:
            with user_errors():
                raise VllmdiagError(
                    "missing argument 'PKG' before --",
                    where="PKG",
                    hint="name the package first, e.g. vllmdiag bisect packaging --good 21.0 "
                    "--bad 23.0 -- CHECK...",
                )
        if ctx.params.get("command") and not dashes:
            with user_errors():
                words = " ".join(ctx.params["command"])
                raise VllmdiagError(
                    f"the check command ({words!r}) must follow --", hint=_AFTER_DASHES
                )
        return rest


def register(app: typer.Typer) -> None:
    app.command("bisect", cls=BisectCommand)(bisect)


def bisect(
    pkg: str = typer.Argument(
        ..., metavar="PKG", help="The package, extras allowed: PKG or PKG\\[extra]."
    ),
    command: list[str] = typer.Argument(
        None,
        metavar="-- CHECK",
        help="The check, after --: exit 0 good, 125 skip, anything else bad.",
    ),
    good: str = typer.Option(..., "--good", metavar="VERSION", help="A version known good."),
    bad: str = typer.Option(..., "--bad", metavar="VERSION", help="A version known bad."),
    python: str | None = typer.Option(
        None, "--python", metavar="X.Y", help="The env's Python, or its path (default: this)."
    ),
    exclude_newer: str | None = typer.Option(
        None, "--exclude-newer", metavar="DATE", help="Resolve as of this date."
    ),
    with_: list[str] = typer.Option(
        [],
        "--with",
        metavar="REQUIREMENT",
        help="Another requirement for each step's env (repeatable).",
    ),
    repeat: int | None = typer.Option(
        None,
        "--repeat",
        min=1,
        metavar="N",
        help="Runs per version; majority wins (default 1; 3 for a metric by commit).",
    ),
    metric: str | None = typer.Option(
        None, "--metric", metavar="NAME", help="Bisect a performance regression on this metric."
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        metavar="RATIO",
        help="Ratio to the good version's metric: below 1, bad when the ratio falls under "
        "it (higher is better); above 1, bad when it rises over it (lower is better). "
        "By commit, derived from the two ends when left out.",
    ),
    timeout: float | None = typer.Option(
        None, "--timeout", metavar="SECONDS", help="Seconds per check run."
    ),
    pre: bool = typer.Option(False, "--pre", help="Include pre-releases between the ends."),
    fresh: bool = typer.Option(False, "--fresh", help="Discard the journal of this question."),
    recipe: str | None = typer.Option(
        None, "--recipe", metavar="FILE", help="A recipe whose cell is the check."
    ),
    cell: str | None = typer.Option(
        None, "--cell", metavar="ID", help="The recipe cell to run as the check."
    ),
    by: str = typer.Option(
        "release",
        "--by",
        metavar="release|commit",
        help="Bisect released versions, or the main branch's commits on per-commit wheels.",
    ),
    repo: str | None = typer.Option(
        None,
        "--repo",
        metavar="PATH",
        help="By commit: a clone of the project (blobless is enough).",
    ),
    repo_url: str | None = typer.Option(
        None,
        "--repo-url",
        metavar="URL",
        help="By commit: the repository vllmdiag clones (metadata only) into its cache.",
    ),
    wheels: str | None = typer.Option(
        None,
        "--wheels",
        metavar="TEMPLATE",
        help="By commit: the per-commit index URL, with {commit} and optionally {variant} "
        "(vLLM's own for vllm).",
    ),
    variant: str | None = typer.Option(
        None,
        "--variant",
        metavar="NAME",
        help="By commit: the wheels' CUDA variant (cu129, cu130, cpu); default from the driver.",
    ),
    main: str = typer.Option(
        "main", "--main", metavar="BRANCH", help="By commit: the project's main branch."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Find the first release (or commit) of PKG that breaks a check (git-bisect-run rules)."""
    console = human(as_json)
    with user_errors():
        if by not in ("release", "commit"):
            raise VllmdiagError(
                f"--by {by!r}: bisect by release or by commit", where="--by", hint="--by commit"
            )
        if by == "release":
            given = [
                name
                for name, value in (
                    ("--repo", repo),
                    ("--repo-url", repo_url),
                    ("--wheels", wheels),
                    ("--variant", variant),
                )
                if value is not None
            ]
            if given or main != "main":
                raise VllmdiagError(
                    f"{(given or ['--main'])[0]} is for a bisection by commit",
                    where=(given or ["--main"])[0],
                    hint="add --by commit, or drop it",
                )
        runs = repeat if repeat is not None else (3 if by == "commit" and metric else 1)
        request = BisectRequest(
            package=pkg,
            good=good,
            bad=bad,
            command=tuple(command or ()),
            python=python,
            exclude_newer=exclude_newer,
            with_requirements=tuple(with_),
            repeat=runs,
            metric=metric,
            threshold=threshold,
            timeout_s=timeout,
            pre=pre,
            fresh=fresh,
            recipe=Path(recipe) if recipe else None,
            cell=cell,
            by=by,
            repo=Path(repo) if repo else None,
            repo_url=repo_url,
            wheels=wheels,
            variant=variant,
            main=main,
        )

        def observe(event: BisectEvent) -> None:
            if isinstance(event, StepStarted):
                what = f"{escape(pkg)}=={escape(event.version)}"
                console.print(f"  [dim]{what}: installing and checking[/]")
            elif isinstance(event, StepFinished):
                step = event.step
                how = "journal" if step.resumed else f"{step.elapsed_s:.1f}s"
                console.print(
                    f"  {escape(step.version)}: [{_STYLE[step.verdict]}]{step.verdict.value}[/] "
                    f"(rc {step.rc}, {how})"
                )
            elif isinstance(event, Note):
                console.print(
                    Text(f"  {event.text}", "yellow" if event.level == "warning" else "dim")
                )

        if by == "commit":
            commit_result = bisect_commits(request, commit_view(console, pkg))
        else:
            result = bisect_releases(request, observe)
    if by == "commit":
        if as_json:
            emit_json(codec.dump(commit_result))
        else:
            render_commits(console, commit_result)
        return
    if as_json:
        emit_json(codec.dump(result))
        return
    render(console, result)


def render(console: Console, result: BisectResult) -> None:
    table = Table(title=Text(f"bisect {result.package}"))
    for col in ("version", "verdict", "rc", "time", "detail"):
        table.add_column(col)
    for s in result.steps:
        table.add_row(
            Text(s.version),
            Text(s.verdict.value, style=_STYLE[s.verdict]),
            " ".join(str(r) for r in s.rcs) or str(s.rc),
            "journal" if s.resumed else f"{s.elapsed_s:.1f}s",
            Text(s.detail.splitlines()[-1][:100] if s.detail else ""),
        )
    console.print(table)
    console.print(
        f"last good: [green]{escape(result.last_good)}[/]   "
        f"first bad: [red]{escape(result.first_bad)}[/]"
    )
    if not result.exact:
        between = escape(", ".join(result.skipped_between) or "versions")
        console.print(
            f"[yellow]not exact:[/] {between} between them could not be checked (skipped)"
        )
    console.print(
        Text(f"{len(result.steps)} steps, {result.elapsed_s:.1f}s, journal {result.journal}", "dim")
    )
