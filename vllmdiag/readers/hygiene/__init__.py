"""Leg hygiene: what in a leg or on the node can change vLLM behind a recipe's back
(plugins, a foreign ``vllm`` script, mismatched flashinfer wheels, other GPU processes,
the DEBUG-logging hazard, installed versions that break what vLLM, torch or flashinfer
declare they require, a ``path:`` leg that cannot be used)."""

from vllmdiag.readers.hygiene.doctor import (
    doctor,
    failed_leg,
    known_env_vars,
    probe,
    require_clean,
    requires,
)
from vllmdiag.readers.hygiene.findings import (
    CONTAMINATED,
    OK,
    SKIPPED,
    WARNING,
    DoctorReport,
    Finding,
)

__all__ = [
    "CONTAMINATED",
    "OK",
    "SKIPPED",
    "WARNING",
    "DoctorReport",
    "Finding",
    "doctor",
    "failed_leg",
    "known_env_vars",
    "probe",
    "require_clean",
    "requires",
]
