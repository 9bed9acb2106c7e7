"""The arm library: ``arms/*.yaml``, one file per family."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from vllmdiag.errors import ConfigError
from vllmdiag.model.arms import Arm
from vllmdiag.services.config.yamlsrc import Located, load_yaml, validate
from vllmdiag.services.paths import data_dir


@dataclass(frozen=True)
class ArmLibrary:
    arms: dict[str, Arm]
    sources: dict[str, str] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Arm]:
        return iter(self.arms.values())

    def get(self, name: str, *, where: str | None = None) -> Arm:
        try:
            return self.arms[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self.arms), n=1, cutoff=0.5)
            raise ConfigError(
                f"unknown arm {name!r}",
                where=where,
                hint=f"did you mean {close[0]!r}? (vllmdiag arms list)"
                if close
                else "see 'vllmdiag arms list', or define the arm inline",
            ) from None


def load_arm_library(directory: Path | None = None) -> ArmLibrary:
    folder = directory or data_dir("arms")
    arms: dict[str, Arm] = {}
    sources: dict[str, str] = {}
    for file in sorted(folder.glob("*.yaml")):
        located = load_yaml(file)
        for arm, where in _arms_in(located):
            if arm.name in arms:
                raise ConfigError(
                    f"arm {arm.name!r} is defined twice (also at {sources[arm.name]})",
                    where=where,
                    hint="arm names are unique across arms/*.yaml",
                )
            arms[arm.name] = arm
            sources[arm.name] = where
    return ArmLibrary(arms, sources)


def _arms_in(located: Located) -> Iterator[tuple[Arm, str]]:
    data = located.data
    if not isinstance(data, dict) or not isinstance(data.get("arms"), list):
        raise located.error((), "an arm file has 'family' and a list 'arms'")
    unknown = set(data) - {"family", "arms", "description"}
    if unknown:
        key = sorted(unknown)[0]
        raise located.error(
            (key,),
            f"unknown key {key!r}",
            key=True,
            hint="an arm file has 'family', 'description' and 'arms'",
        )
    family = str(data.get("family", located.file.stem))
    for i, raw in enumerate(data["arms"]):
        if not isinstance(raw, dict):
            raise located.error(("arms", i), "each arm is a mapping with at least 'name'")
        arm = validate(Arm, located, {"family": family, **raw}, base=("arms", i))
        yield arm, located.where(("arms", i))
