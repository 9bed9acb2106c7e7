"""``MANIFEST.md``: under what conditions every number was measured (the seeds' H200
manifest, generated): the batches, each leg's runtime stack, the pins per model
(disclosed), the harness settings, the hygiene findings per leg, and the recipe
directory's commit and uncommitted changes when each batch started."""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Sequence

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from vllmdiag.jobs.study import plan as splan
from vllmdiag.jobs.study.gitstate import SourceState
from vllmdiag.jobs.study.reading import BatchRecord, StudyRecords
from vllmdiag.jobs.study.render import DASH, GENERATED, markdown
from vllmdiag.model.stack import EnvRecord
from vllmdiag.plan import workloads as wlmod
from vllmdiag.services.envs.verify import freeze_versions

_STACK = (
    ("vllm", "vllm"),
    ("torch", "torch"),
    ("CUDA", "torch_cuda"),
    ("flashinfer", "flashinfer_python"),
    ("transformers", "transformers"),
    ("nvidia-cutlass-dsl", "nvidia_cutlass_dsl"),
    ("triton", "triton"),
    ("python", "python"),
)


def manifest(records: StudyRecords) -> str:
    s = records.study
    out = [f"# Manifest: {s.name}", "", GENERATED, ""]
    out += [
        f"This study holds {len(records.batches)} batch(es); `CANONICAL.md` says which run "
        "counts for every (leg, model, workload).",
        "",
    ]
    out += _batches(records.batches, s.repeats)
    out += _stacks(records)
    out += _pins(records)
    out += _harness(records)
    out += _hygiene(records.batches)
    out += _sources(records.batches)
    return "\n".join(out).rstrip("\n") + "\n"


def _batches(batches: Sequence[BatchRecord], repeats: int) -> list[str]:
    out = ["## Batches", ""]
    for i, b in enumerate(batches, start=1):
        f = b.info.filters
        scope = [
            f"{label} {', '.join(names)}"
            for label, names in (("models", f.models), ("legs", f.legs), ("workloads", f.workloads))
            if names
        ]
        cells = b.info.cells.values()
        counts = ", ".join(f"{k} {v}" for k, v in sorted(b.outcomes.items())) or "none"
        attempts = b.info.attempts
        recipe = attempts[-1].recipe if attempts else DASH
        digest = attempts[-1].recipe_digest if attempts else ""
        out += [f"### Batch {i} · {b.name}", "", "```"]
        out += [
            f"run-id     {', '.join(b.run_ids) or DASH}",
            f"date       {b.started} -- {b.finished or '(no end recorded)'}",
            f"host       {', '.join(b.hosts) or DASH}",
            f"status     {b.status}"
            + (f" ({len(attempts) - 1} resume(s))" if len(attempts) > 1 else ""),
            f"recipe     {recipe}" + (f" (sha256 {digest})" if digest else ""),
            f"ran        {len(cells)} cells: legs {_names(c.leg for c in cells)}; "
            f"models {_names(c.model for c in cells)}; "
            f"workloads {_names(c.workload for c in cells)}; "
            f"{max((c.repeat for c in cells), default=0)} repeat(s)",
            f"scope      {'; '.join(scope) if scope else 'the whole study'}",
            f"result     {counts}",
            "```",
            "",
        ]
    return out or ["## Batches", "", "None yet.", ""]


def _names(items: object) -> str:
    return ", ".join(dict.fromkeys(items)) or DASH  # type: ignore[call-overload]


def _latest(records: StudyRecords) -> dict[str, EnvRecord]:
    """Each leg (by name) as last recorded."""
    out: dict[str, EnvRecord] = {}
    for r in records.env_records():
        out[r.leg] = r
    return out


def _stacks(records: StudyRecords) -> list[str]:
    s = records.study
    latest = _latest(records)
    out = ["## Runtime stack per leg", ""]
    out += [
        "A version comparison compares whole runtime stacks: this table travels with the "
        "numbers. A model pinned on a leg shows as `base → **pinned** (model)`.",
        "",
    ]
    grid = [["leg", *(h for h, _ in _STACK), "lock"]]
    for leg in s.legs:
        base = latest.get(leg)
        pinned = _pinned_records(records, leg, latest)
        row = [leg]
        for _, attr in _STACK:
            text = (getattr(base.stack, attr) if base else None) or DASH
            for models, rec in pinned:
                other = getattr(rec.stack, attr) or DASH
                if other != text:
                    text += f" → **{other}** ({', '.join(models)})"
            row.append(text)
        row.append(base.lock_hash if base else "not built yet")
        grid.append(row)
    out += markdown(grid)
    out += ["", *_reinstalls(records), ""]
    return out


def _pinned_records(
    records: StudyRecords, leg: str, latest: dict[str, EnvRecord]
) -> list[tuple[list[str], EnvRecord]]:
    s = records.study
    by_spec: dict[str, list[str]] = {}
    for model in s.models:
        if s.models[model].pins.get(leg):
            by_spec.setdefault(splan.leg_for(s, leg, model).name, []).append(model)
    return [(models, latest[name]) for name, models in by_spec.items() if name in latest]


def _reinstalls(records: StudyRecords) -> list[str]:
    """Legs whose install changed between batches (another lock hash), and what moved."""
    seen: dict[str, list[tuple[str, EnvRecord]]] = {}
    for b in records.batches:
        for rec in b.envs.values():
            runs = seen.setdefault(rec.leg, [])
            if not runs or runs[-1][1].lock_hash != rec.lock_hash:
                runs.append((b.name, rec))
    out = []
    for leg, runs in seen.items():
        for (b1, r1), (b2, r2) in itertools.pairwise(runs):
            a, z = freeze_versions(r1.freeze), freeze_versions(r2.freeze)
            moved = [
                f"{n} {a.get(n, DASH)} → {z.get(n, DASH)}"
                for n in sorted(set(a) | set(z))
                if a.get(n) != z.get(n)
            ]
            out.append(
                f"- Leg `{leg}` was installed differently in `{b2}` than in `{b1}` "
                f"(lock {r1.lock_hash} → {r2.lock_hash}): {', '.join(moved[:8]) or 'see freezes'}"
            )
    return out or ["Every leg kept one install (one lock hash) across the batches."]


def _pins(records: StudyRecords) -> list[str]:
    s = records.study
    out = ["## Pins per model (disclosed)", ""]
    latest = _latest(records)
    lines = []
    for leg in s.legs:
        pinned = [m for m in s.models if s.models[m].pins.get(leg)]
        for model in pinned:
            pins = s.models[model].pins[leg]
            derived = splan.leg_for(s, leg, model).name
            lines.append(
                f"- `{model}` on `{leg}`: {', '.join(pins)} (it runs on leg `{derived}`"
                + _moved(latest.get(leg), latest.get(derived), pins)
                + ")"
            )
        if pinned:
            others = len(s.models) - len(pinned)
            lines.append(
                f"  - the other {others} model(s) on `{leg}` ran without it: leg `{leg}` is "
                "not one stack, so do not report one version of the pinned package(s) for it"
            )
    out += lines or ["No model is pinned: each leg is one stack for every model."]
    return [*out, ""]


def _moved(base: EnvRecord | None, pinned: EnvRecord | None, pins: Sequence[str]) -> str:
    """``: packaging 24.0 → 23.2`` for each pinned package, as the two legs installed it."""
    if base is None or pinned is None:
        return ""
    a, b = freeze_versions(base.freeze), freeze_versions(pinned.freeze)
    parts = []
    for pin in pins:
        name = canonicalize_name(Requirement(pin).name)
        parts.append(f"{name} {a.get(name, DASH)} → {b.get(name, DASH)}")
    return ": " + ", ".join(parts)


def _harness(records: StudyRecords) -> list[str]:
    s = records.study
    executors = ", ".join(dict.fromkeys(b.executor for b in records.batches if b.executor))
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in s.harness.env.items())
    out = ["## Harness settings", "", "```"]
    out += [
        f"env          {env or '(none)'}",
        f"flags        {' '.join(str(f) for f in s.harness.flags) or '(none)'}",
        f"repeats      {s.repeats} (repetition the outer loop)",
        f"timeout      {s.timeout:g} s per cell",
        f"executor     {executors or 'local'}: cells strictly serial under the node lock",
        "```",
        "",
        "| model | id | tp | flags | env | workloads |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, m in s.models.items():
        flags = " ".join(str(f) for f in m.flags) or DASH
        menv = " ".join(f"{k}={v}" for k, v in m.env.items()) or DASH
        skip = "; ".join(f"skipped on {leg}: {why}" for leg, why in m.skip.items())
        wls = ", ".join(s.model_workloads(name)) + (f" ({skip})" if skip else "")
        out.append(f"| `{name}` | `{m.model}` | {m.tp} | {flags} | {menv} | {wls} |")
    out += ["", "| workload | command | metrics |", "| --- | --- | --- |"]
    for name in s.workloads:
        model = next((m for m in s.models if name in s.model_workloads(m)), None)
        if model is None:
            continue
        argv = wlmod.template(splan.workload_config(s, model, name))
        command = " ".join(argv).replace(s.models[model].model, "{model}")
        out.append(f"| {name} | `{command}` | {', '.join(s.workload_metrics(name))} |")
    return [*out, ""]


def _hygiene(batches: Sequence[BatchRecord]) -> list[str]:
    out = ["## Environment hygiene", ""]
    for b in batches:
        for leg, report in b.hygiene.items():
            notable = [f for f in report.findings if f.severity in ("contaminated", "warning")]
            skipped = [f for f in report.findings if f.severity == "skipped"]
            head = "**contaminated**" if report.contaminated else "clean"
            out.append(
                f"- `{b.name}` · `{leg}`: {head} ({len(report.findings)} checks"
                + (f", {len(skipped)} skipped" if skipped else "")
                + ")"
            )
            out += [f"  - {f.severity.value}: {f.code}: {f.message}" for f in (*notable, *skipped)]
    if len(out) == 2:
        out.append("No hygiene check recorded yet.")
    return [*out, ""]


def _sources(batches: Sequence[BatchRecord]) -> list[str]:
    out = ["## Recipe directory: commit and uncommitted changes", ""]
    shown: dict[SourceState, list[str]] = {}
    for b in batches:
        for i, a in enumerate(b.info.attempts):
            label = b.name if i == 0 else f"{b.name} (resume {i})"
            shown.setdefault(a.source, []).append(label)
    for state, labels in shown.items():
        out += [f"### When {', '.join(labels)} started", ""]
        out += _source(state)
    if len(out) == 2:
        out.append("No batch has started yet.")
    return out


def _source(state: SourceState) -> list[str]:
    if state.repository is None:
        return [f"`{state.recipe_dir}`: {state.note or 'not in a git repository'}.", ""]
    out = [
        "```",
        f"directory    {state.recipe_dir}",
        f"repository   {state.repository}",
        f"commit       {state.commit or '(none)'}" + (f" ({state.branch})" if state.branch else ""),
        "```",
        "",
    ]
    if state.note:
        out += [state.note, ""]
    if not state.dirty:
        return [*out, "No uncommitted changes.", ""]
    out += ["Uncommitted changes (`git status --porcelain`):", "", "```", *state.status, "```", ""]
    if state.diff:
        fence = "````" if "```" in state.diff else "```"
        out += [f"{fence}diff", state.diff.rstrip("\n"), fence, ""]
        if state.truncated:
            out += ["(the diff is longer; cut here)", ""]
    return out
