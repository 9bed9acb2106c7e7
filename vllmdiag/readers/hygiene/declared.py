"""Does a leg hold what its releases declare they need? vLLM (and torch, and flashinfer)
pin some of their dependencies exactly (vLLM 0.25.0: ``nvidia-cutlass-dsl==4.5.2``); a
leg assembled by hand (a ``path:`` leg, an image with packages installed on top) can
carry another version, which the release was never tested with. Pure: reads what the
``requires`` probe reported from the leg."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from vllmdiag.readers.hygiene.findings import OK, WARNING, Finding

#: Whose declared requirements a leg is checked against.
RELEASES = ("vllm", "torch", "flashinfer-python")
CODE = "declared-requirements"


def _applies(req: Requirement, env: Mapping[str, str]) -> bool:
    """Whether a requirement holds on this leg (its marker, with no extra asked)."""
    if req.marker is None:
        return True
    try:
        return bool(req.marker.evaluate({**env, "extra": ""}))
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True


def violations(report: Mapping[str, Any]) -> list[tuple[str, str, str, str | None]]:
    """``(release and version, requirement, name, installed version or None)`` for each
    declared requirement the leg does not meet."""
    env = report.get("markers") or {}
    installed = report.get("installed") or {}
    out: list[tuple[str, str, str, str | None]] = []
    for dist, info in (report.get("dists") or {}).items():
        if not info:
            continue
        who = f"{dist} {info.get('version')}"
        for line in info.get("requires") or []:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if not _applies(req, env):
                continue
            got = installed.get(canonicalize_name(req.name))
            if got is None:
                out.append((who, str(req), req.name, None))
                continue
            try:
                ok = req.specifier.contains(Version(got), prereleases=True)
            except InvalidVersion:
                ok = False
            if not ok:
                out.append((who, str(req), req.name, got))
    return out


def declared(report: Mapping[str, Any]) -> list[Finding]:
    """One finding for each declared requirement the leg breaks, else one OK."""
    checked = [f"{d} {i.get('version')}" for d, i in (report.get("dists") or {}).items() if i]
    if not checked:
        return [Finding(OK, CODE, f"none of {', '.join(RELEASES)} is installed")]
    found = []
    for who, wanted, name, got in violations(report):
        spec = wanted.split(";", 1)[0].strip()
        if got is None:
            message = f"{name} is not installed, and {who} declares {spec}"
            hint = f"install {spec} in the leg"
        else:
            message = (
                f"{name} {got} is installed where {who} declares {spec}: a combination "
                "that release was not built and tested with"
            )
            hint = f"pin {spec} in the leg (or say why the other version is wanted)"
        found.append(Finding(WARNING, CODE, message, hint=hint))
    verb = "declares it requires" if len(checked) == 1 else "declare they require"
    return found or [Finding(OK, CODE, f"the leg meets what {', '.join(checked)} {verb}")]
