"""Load a recipe: YAML → :class:`Recipe`, arms resolved against the library.

Nothing runs until the whole recipe validates; every error names ``file:line:col`` and
the key path, and an unknown key or arm name comes with the closest valid one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vllmdiag.config.arms_lib import ArmLibrary, load_arm_library
from vllmdiag.config.yamlsrc import Located, load_yaml, validate
from vllmdiag.errors import ConfigError
from vllmdiag.model.arms import Arm
from vllmdiag.model.recipe import Recipe
from vllmdiag.paths import data_dir


def resolve_recipe_path(path: Path) -> Path:
    """A path as given, else a recipe shipped with vllmdiag by name (``thrmma-cpu``)."""
    if path.exists() or path.parent != Path("."):
        return path
    bundled = data_dir("recipes") / (path.name if path.suffix else f"{path.name}.yaml")
    return bundled if bundled.exists() else path


def load_recipe(path: Path, library: ArmLibrary | None = None) -> Recipe:
    path = resolve_recipe_path(path)
    if not path.exists():
        raise ConfigError(
            "no such recipe file",
            where=str(path),
            hint="give the path of a recipe YAML (e.g. recipes/thrmma-cpu.yaml) or the name "
            "of a shipped one (thrmma-cpu, silent4, moe_backend_235b)",
        )
    located = load_yaml(path)
    if not isinstance(located.data, dict):
        raise located.error((), "a recipe is a mapping (name, question, legs, baseline, ...)")
    lib = library or load_arm_library()
    data: dict[str, Any] = dict(located.data)
    data["workloads"] = _workloads(located, data)
    data["arms"] = [
        _arm(located, lib, ("arms", i), raw) for i, raw in enumerate(_list(located, data, "arms"))
    ]
    raw_legs = data.get("legs")
    legs: dict[str, Any] = raw_legs if isinstance(raw_legs, dict) else {}
    data["controls"] = [
        _control(located, lib, legs, ("controls", i), raw)
        for i, raw in enumerate(_list(located, data, "controls"))
    ]
    data["source"] = path.resolve()
    recipe: Recipe = validate(Recipe, located, data)
    return recipe


def _list(located: Located, data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise located.error((key,), f"'{key}' is a list")
    return value


def _workloads(located: Located, data: dict[str, Any]) -> Any:
    """``models`` + one ``workload`` template expand to one workload per model."""
    models = data.pop("models", None)
    template = data.pop("workload", None)
    if models is None:
        if template is not None:
            raise located.error(
                ("workload",),
                "'workload' is a template for 'models'",
                key=True,
                hint="add 'models', or use 'workloads' instead",
            )
        return data.get("workloads")
    if "workloads" in data:
        raise located.error(
            ("models",), "give either 'models' (+ 'workload') or 'workloads'", key=True
        )
    if not isinstance(template, dict):
        raise located.error(("models",), "'models' needs a 'workload' template", key=True)
    if isinstance(models, list):
        models = {str(m).rstrip("/").rsplit("/", 1)[-1]: m for m in models}
    if not isinstance(models, dict) or not models:
        raise located.error(("models",), "'models' is a list of model ids or a name→id map")
    return {name: {**template, "model": model} for name, model in models.items()}


def _arm(located: Located, lib: ArmLibrary, path: tuple[str | int, ...], raw: Any) -> Arm:
    if isinstance(raw, str):
        return lib.get(raw, where=located.where(path))
    if isinstance(raw, dict):
        arm: Arm = validate(Arm, located, {"family": "inline", **raw}, base=path)
        return arm
    raise located.error(path, "an arm is a library name or an inline mapping")


def _control(
    located: Located,
    lib: ArmLibrary,
    legs: dict[str, Any],
    path: tuple[str | int, ...],
    raw: Any,
) -> Arm:
    if isinstance(raw, str) and raw in legs:
        return Arm(
            name=raw,
            leg=raw,
            family="control",
            hypothesis=f"the whole runtime stack {raw!r} instead of the baseline's",
        )
    arm = _arm(located, lib, path, raw)
    if arm.leg is None:
        raise ConfigError(
            f"controls.{path[-1]}: control {arm.name!r} must swap the leg",
            where=located.where(path),
            hint="a control is a whole other runtime stack: give a leg name",
        )
    return arm
