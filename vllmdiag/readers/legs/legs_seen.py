"""A leg as a plan sees it before anything runs: its real interpreter and Python version
where it exists (a ``path:`` leg, or a uv leg already built: one short probe), how its
vLLM spells the built-ins' flags, and otherwise which of those are not known yet."""

from __future__ import annotations

from vllmdiag.plan import workloads as wlmod
from vllmdiag.plan.command import UNBUILT_PYTHON, UNKNOWN_PYTHON, LegSeen
from vllmdiag.readers.legs.leg_facts import interpreter_facts, spells_random_lengths
from vllmdiag.services.envs.cache import EnvCache
from vllmdiag.services.envs.spec import LegSpec


def see(spec: LegSpec, cache: EnvCache, pythonpath: str = "") -> LegSeen:
    """``spec`` as its cells' commands will see it (``pythonpath``: the cell's
    ``PYTHONPATH``, which can change which vLLM the leg imports)."""
    python = cache.built_python(spec)
    if python is None:
        return LegSeen(UNBUILT_PYTHON, None, None, UNKNOWN_PYTHON)
    if spec.existing is not None and not spec.existing.exists():
        why = f"interpreter (nothing at {spec.existing} on this machine)"
        return LegSeen(str(spec.existing), None, None, why)
    facts = interpreter_facts(python, pythonpath)
    if facts is None:  # it does not start: the run will say so
        return LegSeen(str(python), None, None)
    dialect = wlmod.CURRENT if spells_random_lengths(facts.vllm_dir) else wlmod.PLAIN_LENGTHS
    return LegSeen(str(python), facts.version, dialect)
