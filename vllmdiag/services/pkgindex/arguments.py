"""What a user typed to name a package, a release, a Python or a count, checked before any
network or env work. Each check raises a :class:`VllmdiagError` that says what was wrong,
where (the argument), and what to write instead."""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from vllmdiag.errors import VllmdiagError


def package(text: str, *, where: str = "PKG", versions_allowed: bool = True) -> Requirement:
    """A distribution name with optional extras (and, for ``window``, a version range)."""
    example = "e.g. nvidia-cutlass-dsl or nvidia-cutlass-dsl[cu13]"
    req = requirement(text, where, example)
    if req.url:
        raise VllmdiagError(
            f"{text!r} is a URL requirement, not a package on the index",
            where=where,
            hint=f"give the name the index lists it under, {example}",
        )
    if req.marker is not None:
        raise VllmdiagError(
            f"{text!r} carries an environment marker, which means nothing here",
            where=where,
            hint=f"drop the '; ...' part, {example}",
        )
    if req.specifier and not versions_allowed:
        raise VllmdiagError(
            f"{text!r} carries a version range; the ends are --good and --bad",
            where=where,
            hint=f"write the bare name, e.g. {req.name}, and the versions as --good/--bad",
        )
    for spec in req.specifier:
        if spec.operator == "===":
            raise VllmdiagError(
                f"{text!r}: '===' (arbitrary equality) cannot bound a version range",
                where=where,
                hint=f"write a range such as '{req.name}>=4.0,<5' or use --versions",
            )
    return req


def version(text: str, where: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise VllmdiagError(
            f"not a version: {text!r}",
            where=where,
            hint="write a release as the index lists it, e.g. 4.5.3",
        ) from None


def python_request(text: str) -> str:
    """``--python``: X.Y, or the path of an interpreter."""
    if re.fullmatch(r"\d+\.\d+", text) or "/" in text:
        return text
    raise VllmdiagError(
        f"not a Python version or interpreter: {text!r}",
        where="--python",
        hint="write X.Y (e.g. 3.11) or the path of a python (e.g. /usr/bin/python3.12)",
    )


def at_least(value: float, minimum: float, where: str) -> None:
    if value < minimum:
        raise VllmdiagError(
            f"{value:g} is too small", where=where, hint=f"give a number of at least {minimum:g}"
        )


def requirement(text: str, where: str, example: str) -> Requirement:
    """``text`` as pip reads a requirement, or an error naming ``where`` with ``example``."""
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0]
        raise VllmdiagError(
            f"not a requirement: {text!r} ({first})",
            where=where,
            hint=f"write it as pip would take it, {example}",
        ) from None
