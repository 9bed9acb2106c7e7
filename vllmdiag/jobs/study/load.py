"""Load a study recipe: YAML → :class:`StudyRecipe`, every error at its ``file:line:col``
(the same machinery, limits and "did you mean" as a recipe)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import model_validator

from vllmdiag import codec
from vllmdiag.errors import ConfigError
from vllmdiag.jobs.study.recipe import StudyRecipe, problems
from vllmdiag.model.recipe import check_name
from vllmdiag.services import redact
from vllmdiag.services.config.recipe_load import flag_values, resolve_recipe_path
from vllmdiag.services.config.yamlsrc import Located, load_yaml, validate

_SECTIONS = (("legs", "leg"), ("models", "model"), ("workloads", "workload"), ("metrics", "metric"))


class _Shape(StudyRecipe):
    """The recipe's shape alone; cross-references are checked after, each at its place."""

    @model_validator(mode="after")
    def _references(self) -> _Shape:
        return self


def load_study(path: Path) -> StudyRecipe:
    path = resolve_recipe_path(path)
    if not path.exists():
        raise ConfigError(
            "no such study recipe",
            where=str(path),
            hint="give the path of a study recipe YAML (e.g. recipes/vllm-ablation-study.yaml)",
        )
    located = load_yaml(path, what="study recipe")
    if not isinstance(located.data, dict):
        raise located.error((), "a study recipe is a mapping (name, legs, models, workloads, ...)")
    data: dict[str, Any] = dict(located.data)
    if "source" in data:
        raise located.error(("source",), "unknown key 'source'", key=True)
    if "arms" in data or "baseline" in data:
        key = "arms" if "arms" in data else "baseline"
        raise located.error(
            (key,),
            f"a study has no '{key}': it compares whole legs",
            key=True,
            hint="use 'vllmdiag matrix' for arms against a baseline; a study's shared "
            "settings go under 'harness' (env, flags)",
        )
    for section, kind in _SECTIONS:
        _check_names(located, data, section, kind)
    data["source"] = path.resolve()
    shape: StudyRecipe = validate(_Shape, located, data)
    found = problems(shape)
    if found:
        where, message, hint = found[0]
        raise located.error(where, message, key=_is_key(located, where), hint=hint)
    study = StudyRecipe.model_validate(data)
    redact.remember(study_secrets(study))
    return study


def _is_key(located: Located, path: tuple[str | int, ...]) -> bool:
    return bool(path) and isinstance(path[-1], str) and path in located.keys


def _check_names(located: Located, data: dict[str, Any], section: str, kind: str) -> None:
    value = data.get(section)
    if not isinstance(value, dict):
        return
    for name in value:
        try:
            check_name(kind, name)
        except ValueError as exc:
            raise located.error(
                (section, name),
                str(exc),
                key=True,
                hint=f"a {kind} name is part of every cell id and run-directory path",
            ) from None


def study_secrets(study: StudyRecipe) -> list[str]:
    """Values kept out of everything written or printed (children still get them)."""
    envs = [study.harness.env, *(m.env for m in study.models.values())]
    envs += [w.env for w in study.workloads.values()]
    found = [v for env in envs for k, v in env.items() if redact.is_secret_name(k)]
    for leg in study.legs.values():
        for url in (leg.index_url, *leg.extra_index_urls):
            found += redact.url_secrets(url or "")
    return found + flag_values(codec.dump(study))
