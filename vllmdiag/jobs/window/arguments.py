"""What the user typed for ``window`` that names no package: the symbol and the
consumers, checked before any network or env work."""

from __future__ import annotations

import keyword

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

from vllmdiag.errors import VllmdiagError
from vllmdiag.services.pkgindex.arguments import requirement

_SYMBOL_EXAMPLE = "e.g. --symbol cutlass.cute.core.ThrMma (the module's dotted path, then the name)"


def consumer(text: str) -> Requirement:
    """A requirement that consumes the package, e.g. ``vllm==0.18.0``."""
    req = requirement(text, "--consumer", "e.g. --consumer vllm==0.18.0")
    if req.url:
        raise VllmdiagError(
            f"{text!r} is a URL requirement; the consumer is read from the index",
            where="--consumer",
            hint=f"write {req.name}==VERSION",
        )
    for spec in req.specifier:
        if spec.operator in ("==", "===") and not spec.version.endswith(".*"):
            try:
                Version(spec.version)
            except InvalidVersion:
                raise VllmdiagError(
                    f"{text!r}: {spec.version!r} is not a version",
                    where="--consumer",
                    hint=f"write e.g. {req.name}==0.18.0",
                ) from None
    return req


def symbol(text: str) -> tuple[str, str]:
    """``MODULE.ATTR`` as (module, attr); every part a Python name."""
    if "." not in text.strip("."):
        raise VllmdiagError(f"{text!r} is not MODULE.ATTR", where="--symbol", hint=_SYMBOL_EXAMPLE)
    parts = text.split(".")
    for i, part in enumerate(parts):
        if not part:
            said = (
                "starts with a dot"
                if i == 0
                else "ends with a dot"
                if i == len(parts) - 1
                else ("has an empty name between two dots")
            )
            raise VllmdiagError(f"{text!r} {said}", where="--symbol", hint=_SYMBOL_EXAMPLE)
        if not part.isidentifier():
            raise VllmdiagError(
                f"{text!r}: {part!r} is not a Python name", where="--symbol", hint=_SYMBOL_EXAMPLE
            )
        if keyword.iskeyword(part):
            raise VllmdiagError(
                f"{text!r}: {part!r} is a Python keyword, not a name",
                where="--symbol",
                hint=_SYMBOL_EXAMPLE,
            )
    return ".".join(parts[:-1]), parts[-1]
