"""Why an arm may not have taken effect (pure helpers the verdict calls per arm).

An inert arm is never "ruled out": it did not test its hypothesis at all."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def inert_env_reason(
    var: str, known: frozenset[str] | None, log_unknown_vars: Iterable[str]
) -> str | None:
    """Why setting ``var`` did nothing on this leg, or None if it may have taken effect.

    ``known``: the leg's own ``vllm.envs`` names (None: not known); ``log_unknown_vars``:
    the names the run logged as "Unknown vLLM environment variable detected"."""
    if var in set(log_unknown_vars):
        return (
            f"{var} is unknown to this leg's vLLM: the run logged "
            f"'Unknown vLLM environment variable detected: {var}' and ignored it"
        )
    if known is not None and var.startswith("VLLM_") and var not in known:
        return (
            f"{var} is not among the {len(known)} environment variables this leg's vllm.envs "
            "knows, so vLLM ignores it"
        )
    return None


def inert_fingerprint_reason(
    field: str, arm: Mapping[str, Any], baseline: Mapping[str, Any]
) -> str | None:
    """The arm meant to change ``field`` of the run's fingerprint, and it did not."""
    a, b = arm.get(field), baseline.get(field)
    if a is None or b is None:
        return None  # a log that does not say proves nothing either way
    if a == b:
        return f"the run's {field} is {a!r}, the same as the baseline's: the arm changed nothing"
    return None


def inert_pin_reason(
    requirement_name: str, wanted: str, installed: Mapping[str, str]
) -> str | None:
    """A pin arm whose version did not end up installed."""
    got = installed.get(requirement_name.lower().replace("_", "-"))
    if got is None:
        return f"{requirement_name} is not installed in the arm's leg (wanted {wanted})"
    if wanted.startswith("==") and got != wanted[2:]:
        return f"the pin did not hold: {requirement_name}=={got} installed, wanted {wanted}"
    return None


def inert_flag_reason(
    flag: str, root_cause_known: str | None, root_cause_message: str
) -> str | None:
    """The leg's CLI refused ``flag`` (argparse: unrecognized argument, invalid choice):
    the arm never ran. Pass the cell's triage root cause (``known`` and ``message``)."""
    if root_cause_known == "cli-rejects-flag" and flag.split()[0] in root_cause_message:
        return f"this leg's vLLM CLI refused {flag}: {root_cause_message}"
    return None
