"""Settings, both ways: what the study asks of each slot now (:func:`expected`), and what
a recorded cell was measured under (:func:`normalise_argv`), in one comparable form.

A command names paths that differ between batches without changing what is measured:
the cell's output directory, the leg's interpreter and the recipe's directory. Both
sides write them as ``{out_dir}``, ``{python}`` and ``{recipe_dir}``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from vllmdiag.jobs.study import plan as splan
from vllmdiag.jobs.study.measured import Expected
from vllmdiag.jobs.study.recipe import StudyRecipe
from vllmdiag.model.stack import EnvRecord
from vllmdiag.plan import command as cmdmod
from vllmdiag.plan import workloads as wlmod
from vllmdiag.services import redact

OUT_DIR = "{out_dir}"
PYTHON = "{python}"
RECIPE_DIR = "{recipe_dir}"


def expected(study: StudyRecipe, locks: Mapping[str, str]) -> dict[splan.Slot, Expected]:
    """Every slot of the study (table order) and its current settings. ``locks``: leg
    key → the lock hash it was last installed with (a leg never recorded matches any)."""
    out = {}
    for slot in splan.slots(study):
        spec = splan.leg_for(study, slot.leg, slot.model)
        wl = splan.workload_config(study, slot.model, slot.workload)
        flags = splan.cell_flags(study, slot.model)
        argvs = tuple(
            dict.fromkeys(
                tuple(
                    redact.text(t)
                    for t in cmdmod.render(
                        wl,
                        name=slot.workload,
                        flags=flags,
                        env={},
                        out_dir=OUT_DIR,
                        recipe_dir=RECIPE_DIR,
                        leg=cmdmod.LegSeen(PYTHON, dialect=dialect),
                    ).argv
                )
                for dialect in (wlmod.CURRENT, wlmod.PLAIN_LENGTHS)
            )
        )
        env = redact.env(splan.cell_env(study, slot.model, slot.workload))
        out[slot] = Expected(spec.name, locks.get(spec.key()), argvs, env)
    return out


def normalise_argv(
    argv: Sequence[str],
    *,
    cell: str,
    out_dirs: Iterable[str],
    pythons: Iterable[str],
    recipe_dirs: Iterable[str],
) -> tuple[str, ...]:
    """``argv`` with its run-specific paths written as placeholders (longest first, so a
    run directory inside the recipe's directory is still ``{out_dir}``). The cell's
    output directory is found by its shape too (``.../cells/<cell>/out``): a batch that
    was moved since, or a journal that did not record its run directory."""
    swaps: dict[str, str] = {}
    for values, placeholder in (
        (out_dirs, OUT_DIR),
        (pythons, PYTHON),
        (recipe_dirs, RECIPE_DIR),
    ):
        for value in values:
            if value and value not in ("/", "."):
                swaps.setdefault(value.rstrip("/"), placeholder)
    ordered = sorted(swaps.items(), key=lambda kv: len(kv[0]), reverse=True)
    shape = re.compile(r"(?:[^\s=]*/)?cells/" + re.escape(cell) + r"/out(?=/|$)")
    out = []
    for token in argv:
        for value, placeholder in ordered:
            token = token.replace(value, placeholder)
        out.append(shape.sub(OUT_DIR, token))
    return tuple(out)


def latest_locks(records: Iterable[EnvRecord]) -> dict[str, str]:
    """Leg key → lock hash, later records winning (give them oldest first)."""
    out: dict[str, str] = {}
    for record in records:
        if record.lock_hash:
            out[record.key] = record.lock_hash
    return out
