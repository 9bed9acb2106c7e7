"""What a leg's own vLLM command line accepts, read from its installed source.

Importing vLLM costs tens of seconds; finding its package directory does not (the
interpreter locates it without running it), and the spelling of a benchmark flag is a
plain string in its source. So each leg is asked once, statically
(:mod:`vllmdiag.readers.legs.leg_facts`).
"""

from __future__ import annotations

from pathlib import Path

from vllmdiag.plan.workloads import CURRENT, PLAIN_LENGTHS, BenchDialect
from vllmdiag.readers.legs.leg_facts import interpreter_facts, spells_random_lengths


def vllm_package_dir(python: Path, pythonpath: str = "") -> Path | None:
    """The ``vllm`` package directory the leg's interpreter would import (with the cell's
    ``PYTHONPATH``, if the recipe sets one), or None."""
    facts = interpreter_facts(python, pythonpath)
    return facts.vllm_dir if facts else None


def bench_dialect(python: Path, pythonpath: str = "") -> BenchDialect:
    """How this leg's ``vllm bench`` spells the built-ins' flags (see :class:`BenchDialect`).
    A leg without vLLM (the CPU reproduction) gets the current spelling; it never runs a
    built-in anyway."""
    return CURRENT if spells_random_lengths(vllm_package_dir(python, pythonpath)) else PLAIN_LENGTHS
