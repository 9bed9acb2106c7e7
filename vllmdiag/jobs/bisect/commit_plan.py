"""What a commit bisection is asked, checked before any git, network or env work, and
planned: the package, its per-commit index template and variant, the leg's Python; and
how each side is reproduced by hand afterwards."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from packaging.utils import canonicalize_name

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.bisect.commit_info import CommitInfo
from vllmdiag.jobs.bisect.commit_results import Reproduce
from vllmdiag.jobs.bisect.commit_wheels import commit_wheel
from vllmdiag.jobs.bisect.git_range import DEFAULT_REPOS
from vllmdiag.jobs.bisect.recipe_cell import RecipeCell
from vllmdiag.jobs.bisect.request import BisectRequest, validate_check
from vllmdiag.jobs.bisect.wheel_template import (
    DEFAULT_TEMPLATES,
    check_template,
    machine_variant,
    variant_in,
)
from vllmdiag.services import redact
from vllmdiag.services.envs.spec import LegSpec, default_python
from vllmdiag.services.pkgindex import arguments as args
from vllmdiag.services.pkgindex import config
from vllmdiag.services.pkgindex.target_python import check_python


@dataclass(frozen=True)
class Plan:
    req: BisectRequest
    target: RecipeCell | None
    label: str  # PKG or PKG[extra]
    name: str
    template: str
    variant: str | None
    python: str


def as_of(date: str) -> str:
    """A git ISO date as the UTC timestamp uv's ``--exclude-newer`` takes."""
    return datetime.fromisoformat(date).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def validate_commits(req: BisectRequest) -> RecipeCell | None:
    """Every argument of a commit bisection, before any git, network or env work."""
    pkg = args.package(req.package, versions_allowed=False)
    if req.good == req.bad:
        raise VllmdiagError(
            f"--good and --bad are the same commit ({req.good})",
            where="--bad",
            hint="give a commit (or tag) that checks good and a later one that checks bad",
        )
    if req.exclude_newer:
        raise VllmdiagError(
            "--exclude-newer is each commit's own date in a commit bisection",
            where="--exclude-newer",
            hint="drop it: every step resolves the rest as of the commit's date",
        )
    if req.pre:
        raise VllmdiagError("--pre is for release bisection", where="--pre", hint="drop it")
    if (
        req.repo is not None
        and not (req.repo / ".git").exists()
        and not (req.repo / "HEAD").exists()
    ):
        raise VllmdiagError(
            f"{req.repo} is not a git repository",
            where="--repo",
            hint="give a clone of the project (a blobless one is enough)",
        )
    if req.repo is not None and req.repo_url is not None:
        raise VllmdiagError(
            "give either --repo or --repo-url, not both",
            where="--repo-url",
            hint="--repo names your clone; --repo-url what vllmdiag clones",
        )
    name = canonicalize_name(pkg.name)
    if req.repo is None and req.repo_url is None and name not in DEFAULT_REPOS:
        raise VllmdiagError(
            f"no repository known for {pkg.name}",
            where="--repo",
            hint="give its clone with --repo PATH or its URL with --repo-url URL",
        )
    if req.wheels is None and name not in DEFAULT_TEMPLATES:
        raise VllmdiagError(
            f"no per-commit wheel index known for {pkg.name}",
            where="--wheels",
            hint="give its index URL template, e.g. --wheels https://host/{commit}/{variant}",
        )
    check_template(req.wheels or DEFAULT_TEMPLATES[name])
    if req.variant is not None and not req.variant.replace("_", "").isalnum():
        raise VllmdiagError(
            f"not a variant: {req.variant!r}", where="--variant", hint="e.g. cu129, cu130 or cpu"
        )
    return validate_check(req, threshold_required=False)


def plan(req: BisectRequest, target: RecipeCell | None) -> Plan:
    pkg = args.package(req.package, versions_allowed=False)
    extras = f"[{','.join(sorted(pkg.extras))}]" if pkg.extras else ""
    name = canonicalize_name(pkg.name)
    template = req.wheels or DEFAULT_TEMPLATES[name]
    variant = req.variant
    if variant is None and "variant" in check_template(template):
        leg = _cell_leg(target) if target else None
        named = variant_in([*leg.requirements, *leg.extra_index_urls]) if leg else None
        variant = named or machine_variant()
    # The X.Y the wheels are picked for (``--python`` may name an interpreter by path).
    python, _ = check_python(
        args.python_request(target.python if target else (req.python or default_python()))
    )
    return Plan(req, target, pkg.name + extras, pkg.name, template, variant, python)


def _cell_leg(target: RecipeCell) -> LegSpec:
    from vllmdiag.plan import cells as planmod

    return planmod.find_cell(planmod.expand(target.recipe), target.cell).leg


def reproduce(plan: Plan, c: CommitInfo, logs: Path) -> Reproduce:
    """The shell lines that rebuild ``c``'s side and run its check (a recipe cell: its
    step's run directory, whose report pastes and runs)."""
    found = commit_wheel(plan.template, c.commit, plan.variant, plan.name, plan.python)
    if found.env is not None:
        check = f"PATH={shlex.quote(str(found.env / 'bin'))}:$PATH {shlex.join(plan.req.command)}"
        return Reproduce(c.commit, None, (f"# the prebuilt environment {found.env}",), check)
    url = found.file.url if found.file else None
    venv = f"bisect-{c.commit[:10]}"
    pin = f"{plan.label} @ {url}" if url else f"{plan.label} (no wheel: {found.said})"
    custom = config.custom_index()
    index = f" --default-index {shlex.quote(redact.url(custom))}" if custom else ""
    if plan.target is not None:
        install: tuple[str, ...] = (
            f"# recipe {plan.target.path}, cell {plan.target.cell}, its leg with {pin}",
        )
        run_dir = shlex.quote(str(logs / c.commit / "run0"))
        check = f"vllmdiag report {run_dir}  # the step's run: its Reproduction pastes and runs"
        return Reproduce(c.commit, url, install, check)
    extra = "".join(f" {shlex.quote(r)}" for r in plan.req.with_requirements)
    install = (
        f"uv venv --python {shlex.quote(plan.python)} {venv}",
        f"uv pip install --python {venv}/bin/python {shlex.quote(pin)}{extra}"
        f" --exclude-newer {as_of(c.committed)}{index}",
    )
    check = f"PATH={venv}/bin:$PATH {shlex.join(plan.req.command)}"
    return Reproduce(c.commit, url, install, check)
