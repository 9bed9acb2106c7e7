"""What a leg is: a Python version, requirements and resolver settings."""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from vllmdiag.errors import EnvError


def default_python() -> str:
    """The X.Y of the interpreter running vllmdiag: one that surely exists here."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def parse_requirement(text: str, *, where: str | None = None) -> Requirement:
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        raise EnvError(
            f"not a PEP 508 requirement: {text!r} ({exc})",
            where=where,
            hint="write it as pip would take it, e.g. 'nvidia-cutlass-dsl==4.5.3'",
        ) from None


@dataclass(frozen=True)
class LegSpec:
    """A runtime stack. Two specs with the same :meth:`key` share one environment.

    ``existing`` names a prebuilt venv (or its python) that vllmdiag uses as it is and
    never modifies: the stack of a container or a machine with no package index.
    """

    name: str
    requirements: tuple[str, ...] = ()
    python: str | None = None
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    exclude_newer: str | None = None
    existing: Path | None = None
    pins: tuple[str, ...] = field(default=(), compare=False)

    @property
    def python_request(self) -> str:
        return self.python or default_python()

    def with_pin(self, requirement: str) -> LegSpec:
        """This leg with one requirement replaced (or added): a pin arm's derived leg."""
        if self.existing is not None:
            raise EnvError(
                f"leg {self.name!r} is an existing environment and cannot take a pin",
                hint="pin arms need a leg vllmdiag builds (requirements, not 'path')",
            )
        pin = parse_requirement(requirement)
        name = canonicalize_name(pin.name)
        kept = tuple(r for r in self.requirements if canonicalize_name(Requirement(r).name) != name)
        return replace(
            self,
            name=f"{self.name}+{pin.name}{pin.specifier}",
            requirements=(*kept, requirement),
            pins=(*self.pins, requirement),
        )

    def identity(self) -> dict[str, object]:
        return {
            "python": self.python_request,
            "requirements": sorted(self.requirements),
            "index_url": self.index_url,
            "extra_index_urls": list(self.extra_index_urls),
            "exclude_newer": self.exclude_newer,
            "existing": str(self.existing) if self.existing else None,
        }

    def key(self) -> str:
        blob = json.dumps(self.identity(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]
