"""A ``bisect`` question: the request, its identity (which journal it owns), every
argument checked before any network or env work, and the candidate versions between its
ends on the index."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vllmdiag import codec
from vllmdiag.errors import VllmdiagError
from vllmdiag.services import redact
from vllmdiag.services.config import numbers
from vllmdiag.services.envs.spec import default_python
from vllmdiag.services.pkgindex import arguments as args
from vllmdiag.services.pkgindex import config, simple_api
from vllmdiag.services.pkgindex.target_python import check_python
from vllmdiag.services.pkgindex.versions import candidates, nearby, parse_date

SCHEMA = 2  # of the journal: its header is a BisectQuestion

if TYPE_CHECKING:
    from vllmdiag.jobs.bisect.recipe_cell import RecipeCell


@dataclass(frozen=True)
class BisectRequest:
    package: str  # PKG or PKG[extra]
    good: str
    bad: str
    command: tuple[str, ...]
    python: str | None = None
    exclude_newer: str | None = None
    with_requirements: tuple[str, ...] = ()
    repeat: int = 1
    metric: str | None = None
    threshold: float | None = None
    timeout_s: float | None = None
    pre: bool = False
    fresh: bool = False  # discard an earlier journal of the same question
    recipe: Path | None = None  # the check is this recipe's cell ...
    cell: str | None = None  # ... run on its leg with PKG==V pinned
    # --by commit: the ends are git revisions, each step the wheel of one commit
    by: str = "release"
    repo: Path | None = None  # the user's clone ...
    repo_url: str | None = None  # ... or the URL vllmdiag clones (metadata only)
    wheels: str | None = None  # the per-commit index template ({commit}, {variant})
    variant: str | None = None
    main: str = "main"


@dataclass(frozen=True)
class CommitQuestion:
    """What a commit bisection adds to its question: the commits its ends resolved to on
    the main branch, the wheel index template and variant."""

    good_base: str
    bad_base: str
    main_ref: str
    wheels: str
    variant: str | None


@dataclass(frozen=True)
class BisectQuestion:
    """What makes two bisects the same question (and so share a journal): the journal's
    header. The index is named redacted; a recipe check adds the recipe, its content's
    digest and the cell."""

    package: str
    good: str
    bad: str
    command: tuple[str, ...]
    python: str
    exclude_newer: str | None
    with_requirements: tuple[str, ...]
    repeat: int
    metric: str | None
    threshold: float | None
    pre: bool
    index: str
    recipe: str | None = None
    recipe_digest: str | None = None
    cell: str | None = None
    schema: int = SCHEMA
    commits: CommitQuestion | None = None

    @property
    def key(self) -> str:
        """The journal's directory name (a release question's is what it always was)."""
        data = codec.dump(self)
        if data.get("commits") is None:
            data.pop("commits", None)
        blob = json.dumps(data, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def question(req: BisectRequest, target: RecipeCell | None) -> BisectQuestion:
    return BisectQuestion(
        package=req.package,
        good=req.good,
        bad=req.bad,
        command=req.command,
        python=req.python or default_python(),
        exclude_newer=req.exclude_newer,
        with_requirements=tuple(sorted(req.with_requirements)),
        repeat=req.repeat,
        metric=req.metric,
        threshold=req.threshold,
        pre=req.pre,
        index=redact.url(config.configured_index()),
        recipe=str(target.path) if target else None,
        recipe_digest=target.digest if target else None,
        cell=target.cell if target else None,
    )


def validate(req: BisectRequest) -> RecipeCell | None:
    """Every argument, before any network or env work; the recipe cell to check, if the
    check is one."""
    args.package(req.package, versions_allowed=False)
    good, bad = args.version(req.good, "--good"), args.version(req.bad, "--bad")
    if good == bad:
        raise VllmdiagError(
            f"--good and --bad are the same version ({good})",
            where="--bad",
            hint="give a version that checks good and a later (or earlier) one that checks bad",
        )
    return validate_check(req, threshold_required=True)


def validate_check(req: BisectRequest, *, threshold_required: bool) -> RecipeCell | None:
    """The arguments of the check (command or recipe cell, repeats, metric); the recipe
    cell to check, if the check is one."""
    args.at_least(req.repeat, 1, "--repeat")
    if req.timeout_s is not None:
        numbers.seconds(req.timeout_s, "--timeout", zero_ok=False)
    if req.threshold is not None and req.metric is None and not threshold_required:
        raise VllmdiagError(
            "--threshold needs --metric",
            where="--metric",
            hint="e.g. --metric tokens_per_s (the threshold is derived from the two ends "
            "when --threshold is left out)",
        )
    if threshold_required and (req.metric is None) != (req.threshold is None):
        missing = "--threshold" if req.threshold is None else "--metric"
        raise VllmdiagError(
            "--metric and --threshold go together",
            where=missing,
            hint="e.g. --metric tokens_per_s --threshold 0.9 (bad below 90% of the good end)",
        )
    if req.threshold is not None:
        numbers.ratio(req.threshold, "--threshold")
    for text in req.with_requirements:
        args.package(text, where="--with")
    if req.exclude_newer:
        parse_date(req.exclude_newer)
    if req.python:
        args.python_request(req.python)
    if (req.recipe is None) != (req.cell is None):
        missing = "--cell" if req.cell is None else "--recipe"
        raise VllmdiagError(
            "--recipe and --cell go together", where=missing, hint="name the recipe and its cell"
        )
    if req.recipe is None:
        if not req.command:
            raise VllmdiagError(
                "no check to run",
                hint="put the check command after --, e.g. vllmdiag bisect PKG --good V "
                "--bad V -- python -c 'import pkg', or give --recipe/--cell",
            )
        return None
    if req.command:
        raise VllmdiagError(
            "give either a command after -- or --recipe/--cell, not both",
            hint="drop the command after -- to check the recipe's cell",
        )
    if req.python or req.exclude_newer or req.with_requirements or req.timeout_s:
        raise VllmdiagError(
            "--python, --exclude-newer, --with and --timeout come from the recipe here",
            hint="a recipe cell runs on its own leg with PKG==V pinned; edit the recipe",
        )
    from vllmdiag.jobs.bisect.recipe_cell import RecipeCell

    assert req.cell is not None
    return RecipeCell.load(req.recipe, req.cell)


def bisect_versions(req: BisectRequest) -> list[str]:
    """The candidates from ``good`` to ``bad`` (inclusive), ordered from the good end."""
    pkg = args.package(req.package, versions_allowed=False)
    python, _ = check_python(args.python_request(req.python or default_python()))
    good, bad = args.version(req.good, "--good"), args.version(req.bad, "--bad")
    lo, hi = min(good, bad), max(good, bad)
    when = parse_date(req.exclude_newer) if req.exclude_newer else None
    proj = simple_api.project(pkg.name, where="PKG")
    found = [
        c.version
        for c in candidates(
            proj.files, python=python, pre=req.pre, exclude_newer=when, always=(good, bad)
        )
        if lo <= c.version <= hi
    ]
    for end, v in (("--good", good), ("--bad", bad)):
        if v not in found:
            raise VllmdiagError(
                f"{pkg.name}=={v} is not an installable release here (Python {python})",
                where=end,
                hint="it may be yanked, absent from the index, newer than --exclude-newer "
                f"or not built for this Python; releases near it: {nearby(proj.files, v)}",
            )
    ordered = found if good < bad else list(reversed(found))
    return [str(v) for v in ordered]
