"""Arms that did not take effect. Such an arm proves nothing, so it is never 'ruled out'.

Pure: the caller gathers the evidence (the leg's runtime stack, the variables its vLLM
knows, the warnings and fingerprints of the cells' logs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from vllmdiag.model.arms import Arm, ArmKind
from vllmdiag.model.fingerprint import Fingerprint

REJECTED_FLAG = (
    r"unrecognized arguments:.*?{flag}(?:\s|$|=)",
    r"argument {flag}(?:/\S+)?: invalid choice",
    r"error: argument {flag}\b",
    r"no such option: {flag}\b",
)


@dataclass(frozen=True)
class ArmEvidence:
    """What the run showed about one arm."""

    arm: Arm
    versions: Mapping[str, str] = field(default_factory=dict)  # distribution → version
    known_env: frozenset[str] | None = None
    unknown_env_warnings: frozenset[str] = frozenset()
    log_texts: Sequence[str] = ()
    fingerprints: Sequence[Fingerprint] = ()
    baseline_fingerprints: Sequence[Fingerprint] = ()
    pin_not_held: tuple[str, ...] = ()  # what the resolver installed instead, per pin


def inert_reason(ev: ArmEvidence) -> str | None:
    arm = ev.arm
    if arm.kind is ArmKind.PIN and ev.pin_not_held:
        return "the pin did not hold: " + "; ".join(ev.pin_not_held)
    if arm.honoured_by:
        why = _not_honoured(arm.honoured_by, ev.versions)
        if why:
            return why
    for var in arm.env:
        if var in ev.unknown_env_warnings:
            return f"the leg's vLLM warned 'Unknown vLLM environment variable detected: {var}'"
        if ev.known_env is not None and var.startswith("VLLM_") and var not in ev.known_env:
            return f"the leg's vLLM does not know {var} (not in vllm.envs)"
    for flag in arm.flag:
        for text in ev.log_texts:
            if _rejected(flag.name, text):
                return f"the leg's CLI rejects {flag.name}"
    if arm.fingerprint_field and ev.fingerprints and ev.baseline_fingerprints:
        field_ = arm.fingerprint_field
        mine = {_norm(getattr(fp, field_, None)) for fp in ev.fingerprints}
        base = {_norm(getattr(fp, field_, None)) for fp in ev.baseline_fingerprints}
        if None not in mine and mine == base and len(mine) == 1:
            return f"the run's {field_} stayed {next(iter(mine))!r}, as in the baseline"
    return None


def _not_honoured(requirement: str, versions: Mapping[str, str]) -> str | None:
    req = Requirement(requirement)
    installed = {canonicalize_name(k): v for k, v in versions.items()}
    got = installed.get(canonicalize_name(req.name))
    if got is None:
        return None  # the package is not in this leg: the condition does not apply
    try:
        ok = req.specifier.contains(Version(got), prereleases=True)
    except InvalidVersion:
        return None
    return None if ok else f"{req.name} {got} ignores this arm (honoured by {requirement})"


def _rejected(flag: str, text: str) -> bool:
    esc = re.escape(flag)
    return any(re.search(p.format(flag=esc), text) for p in REJECTED_FLAG)


def _norm(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return v


def unknown_env_vars(texts: Iterable[str]) -> frozenset[str]:
    found = set()
    for text in texts:
        found.update(re.findall(r"Unknown vLLM environment variable detected: (\w+)", text))
    return frozenset(found)
