"""Load a recipe: YAML → :class:`Recipe`, arms resolved against the library.

Nothing runs until the whole recipe validates; every error names ``file:line:col`` and
the key path, and an unknown key or arm name comes with the closest valid one.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from vllmdiag import codec
from vllmdiag.errors import ConfigError
from vllmdiag.model.arms import Arm
from vllmdiag.model.recipe import TIMING_REPEATS, Recipe, check_name
from vllmdiag.services import redact
from vllmdiag.services.config.arms_lib import ArmLibrary, load_arm_library
from vllmdiag.services.config.source import did_you_mean, probe
from vllmdiag.services.config.yamlsrc import Located, load_yaml, validate
from vllmdiag.services.paths import data_dir


def resolve_recipe_path(path: Path) -> Path:
    """A path as given, else a recipe shipped with vllmdiag by name (``thrmma-cpu``)."""
    if probe(path, what="recipe") is not None or path.parent != Path("."):
        return path
    bundled = data_dir("recipes") / (path.name if path.suffix else f"{path.name}.yaml")
    return bundled if bundled.exists() else path


def _recipe_hint(path: Path) -> str:
    close = did_you_mean(path)
    if close is None and path.parent == Path("."):
        shipped = [p.stem for p in data_dir("recipes").glob("*.yaml")]
        names = difflib.get_close_matches(path.stem, shipped, n=1)
        close = f"did you mean the shipped recipe {names[0]!r}?" if names else None
    return close or (
        "give the path of a recipe YAML (e.g. recipes/thrmma-cpu.yaml) or the name "
        "of a shipped one (thrmma-cpu, silent4, moe_backend_235b)"
    )


def load_recipe(path: Path, library: ArmLibrary | None = None) -> Recipe:
    path = resolve_recipe_path(path)
    if probe(path, what="recipe") is None:
        raise ConfigError(
            "no such recipe file",
            where=str(path),
            hint=_recipe_hint(path),
        )
    located = load_yaml(path)
    if not isinstance(located.data, dict):
        raise located.error((), "a recipe is a mapping (name, question, legs, baseline, ...)")
    lib = library or load_arm_library()
    data: dict[str, Any] = dict(located.data)
    _check_names(located, data, "legs", "leg")
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
    _check_leg_refs(located, data)
    data["source"] = path.resolve()
    recipe: Recipe = validate(Recipe, located, data)
    if "repeats" not in data and recipe.is_metric_matrix:
        # Timing is the question: one pass cannot tell a difference from noise.
        recipe = recipe.model_copy(update={"repeats": TIMING_REPEATS})
    redact.remember(recipe_secrets(recipe))
    return recipe


def recipe_secrets(recipe: Recipe) -> list[str]:
    """Values to keep out of everything vllmdiag writes or prints: those of secret-looking
    variables the recipe sets, and passwords in its index URLs (children get them)."""
    envs = [recipe.baseline.env, *(w.env for w in recipe.workloads.values())]
    envs += [a.env for a in recipe.all_arms()]
    found = [v for env in envs for k, v in env.items() if redact.is_secret_name(k)]
    for leg in recipe.legs.values():
        for url in (leg.index_url, *leg.extra_index_urls):
            found += redact.url_secrets(url or "")
    found += flag_values(codec.dump(recipe))
    return found


def _check_leg_refs(located: Located, data: dict[str, Any]) -> None:
    """Every leg the baseline, an arm or a control names is one of the legs: said at
    the name's ``file:line:col``, with the closest leg."""
    legs = data.get("legs")
    if not isinstance(legs, dict) or not legs:
        return
    refs: list[tuple[tuple[str | int, ...], Any, str]] = []
    baseline = located.data.get("baseline") if isinstance(located.data, dict) else None
    if isinstance(baseline, dict):
        refs.append((("baseline", "leg"), baseline.get("leg"), "baseline.leg"))
    for key in ("arms", "controls"):
        raw = located.data.get(key) if isinstance(located.data, dict) else None
        for i, item in enumerate(raw if isinstance(raw, list) else []):
            if isinstance(item, dict) and "leg" in item:
                refs.append(((key, i, "leg"), item["leg"], f"{key}[{i}].leg"))
    for where, name, what in refs:
        if isinstance(name, str) and name not in legs:
            close = difflib.get_close_matches(name, [str(k) for k in legs], n=1)
            raise ConfigError(
                f"{what} {name!r} is not one of the legs",
                where=located.where(where),
                hint=f"did you mean {close[0]!r}?"
                if close
                else f"the legs are: {', '.join(map(str, legs))}",
            )


def flag_values(obj: Any) -> list[str]:
    """Values of secret-looking flags anywhere in the recipe (arm flags, workload commands
    and arguments), each list of words read as one command line."""
    if isinstance(obj, str):
        return redact.flag_secrets([obj])
    if isinstance(obj, dict):
        name, value = obj.get("name"), obj.get("value")
        if set(obj) == {"name", "value"} and isinstance(name, str) and isinstance(value, str):
            return redact.flag_secrets([name, value])  # an arm's flag
        return [v for item in obj.values() for v in flag_values(item)]
    if isinstance(obj, (list, tuple)):
        if all(isinstance(x, str) for x in obj):
            return redact.flag_secrets(obj)
        return [v for item in obj for v in flag_values(item)]
    return []


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
        _check_names(located, data, "workloads", "workload")
        return data.get("workloads")
    if "workloads" in data:
        raise located.error(
            ("models",),
            "give either 'models' (+ 'workload') or 'workloads'",
            key=True,
            hint="a study recipe (legs × models × workloads) runs with 'vllmdiag study RECIPE'",
        )
    if not isinstance(template, dict):
        raise located.error(("models",), "'models' needs a 'workload' template", key=True)
    if isinstance(models, list):
        named = {}
        for i, m in enumerate(models):
            name = str(m).rstrip("/").rsplit("/", 1)[-1]
            if name in named:
                raise located.error(
                    ("models", i),
                    f"two models are both called {name!r} here",
                    hint="give the models names: models: {name: model-id, ...}",
                )
            _check_name(located, ("models", i), "workload", name, key=False)
            named[name] = m
        models = named
    if not isinstance(models, dict) or not models:
        raise located.error(("models",), "'models' is a list of model ids or a name→id map")
    _check_names(located, {"models": models}, "models", "workload")
    return {name: {**template, "model": model} for name, model in models.items()}


def _check_names(located: Located, data: dict[str, Any], key: str, kind: str) -> None:
    value = data.get(key)
    if isinstance(value, dict):
        for name in value:
            _check_name(located, (key, name), kind, name, key=True)


def _check_name(
    located: Located, path: tuple[str | int, ...], kind: str, name: str, *, key: bool
) -> None:
    try:
        check_name(kind, name)
    except ValueError as exc:
        raise located.error(
            path,
            str(exc),
            key=key,
            hint=f"a {kind} name is part of every cell id and run-directory path",
        ) from None


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
