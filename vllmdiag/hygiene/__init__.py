"""Leg hygiene: what in a leg or on the node can change vLLM behind a recipe's back
(plugins, a foreign ``vllm`` script, mismatched flashinfer wheels, other GPU processes,
the DEBUG-logging hazard)."""

from vllmdiag.hygiene.doctor import doctor, known_env_vars, probe, require_clean
from vllmdiag.hygiene.model import CONTAMINATED, OK, SKIPPED, WARNING, DoctorReport, Finding

__all__ = [
    "CONTAMINATED",
    "OK",
    "SKIPPED",
    "WARNING",
    "DoctorReport",
    "Finding",
    "doctor",
    "known_env_vars",
    "probe",
    "require_clean",
]
