"""A ``window`` question as the user asked it, and every argument of it checked before
any network or env work."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.window import arguments as window_args
from vllmdiag.services.envs.spec import default_python
from vllmdiag.services.pkgindex import arguments as args
from vllmdiag.services.pkgindex.versions import parse_date, parse_specifier


@dataclass(frozen=True)
class WindowRequest:
    package: str  # PKG or PKG[extra]
    symbol: str  # MODULE.ATTR
    versions: str | None = None
    pre: bool = False
    python: str | None = None
    exclude_newer: str | None = None
    consumers: tuple[str, ...] = ()
    scan: bool = False
    jobs: int = 4
    no_cache: bool = False
    samples: int = 3
    static: bool = True  # read the wheels' sources first; imports confirm every change


@dataclass(frozen=True)
class Asked:
    """A request's arguments, parsed."""

    package: Requirement
    spec: SpecifierSet
    when: datetime | None
    consumers: tuple[Requirement, ...]
    python: str  # X.Y or the path of an interpreter (not yet checked to exist)

    @property
    def extras(self) -> str:
        """``[a,b]`` for the package's extras, or nothing."""
        return f"[{','.join(sorted(self.package.extras))}]" if self.package.extras else ""


def check_arguments(req: WindowRequest) -> Asked:
    """Every argument, without touching the network or an env."""
    pkg = args.package(req.package)
    window_args.symbol(req.symbol)
    if req.versions is not None and pkg.specifier:
        raise VllmdiagError(
            f"the range is given twice: in PKG ({pkg.specifier}) and --versions",
            where="--versions",
            hint="give it once",
        )
    spec = parse_specifier(req.versions if req.versions is not None else str(pkg.specifier))
    when = parse_date(req.exclude_newer) if req.exclude_newer else None
    consumers = tuple(window_args.consumer(text) for text in req.consumers)
    python = args.python_request(req.python or default_python())
    args.at_least(req.jobs, 1, "--jobs")
    args.at_least(req.samples, 0, "samples")
    return Asked(pkg, spec, when, consumers, python)
