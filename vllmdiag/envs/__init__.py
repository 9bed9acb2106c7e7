"""Legs as isolated, content-addressed uv environments."""

from vllmdiag.envs.cache import Env, EnvCache, EnvEvent
from vllmdiag.envs.spec import LegSpec

__all__ = ["Env", "EnvCache", "EnvEvent", "LegSpec"]
