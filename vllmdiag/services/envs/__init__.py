"""Legs as isolated, content-addressed uv environments."""

from vllmdiag.services.envs.cache import Env, EnvCache, EnvEvent
from vllmdiag.services.envs.spec import LegSpec

__all__ = ["Env", "EnvCache", "EnvEvent", "LegSpec"]
