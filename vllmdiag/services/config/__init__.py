"""YAML → validated model objects, with ``file:line:col`` errors."""

from vllmdiag.services.config.arms_lib import ArmLibrary, load_arm_library
from vllmdiag.services.config.recipe_load import load_recipe

__all__ = ["ArmLibrary", "load_arm_library", "load_recipe"]
