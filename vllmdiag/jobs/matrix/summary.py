"""The matrix written for people: ``summary.md`` and ``summary.txt``, plus ``verdict.json``.

The table has the shape of the diag_silent4 table of the B200/H200 ablation this project
grew out of: one row per arm (baseline
first, controls last), one column per workload, and the effect.
"""

from __future__ import annotations

from collections import Counter

from vllmdiag.jobs.matrix.report import MatrixReport
from vllmdiag.model.noise import HOW_TO_MEASURE
from vllmdiag.model.outcome import Outcome
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.stack import cuda_build
from vllmdiag.model.verdict import Square, Verdict
from vllmdiag.readers.triage.blame import blame_text
from vllmdiag.spine.rundir import RunDir, ended


def table_rows(verdict: Verdict, workloads: list[str] | tuple[str, ...]) -> list[list[str]]:
    """Header + rows: arm, one cell per workload, effect."""
    rows = [["arm", *workloads, "effect"]]
    rows.append(["baseline", *(_cell(verdict.baseline[w]) for w in workloads), ""])
    for arm in verdict.arms:
        effect = arm.effect.value.replace("_", " ")
        if not arm.single_variable:
            effect += " (compound)"
        rows.append([arm.name, *(_cell(arm.workloads.get(w)) for w in workloads), effect])
    return rows


def _cell(s: Square | None) -> str:
    if s is None:
        return "—"
    if s.ratio is not None and s.difference_detected is None:
        return f"{s.label} ({s.ratio:.2f}x, not called)"
    if s.ratio is not None:
        return f"{s.label} ({s.ratio:.2f}x)"
    return s.label


def markdown(report: MatrixReport, recipe: Recipe) -> str:
    v = report.verdict
    rows = table_rows(v, report.workloads)
    out = [f"# {report.recipe}", "", f"**Question.** {report.question}", ""]
    out.append("| " + " | ".join(_md_cell(c) for c in rows[0]) + " |")
    out.append("| " + " | ".join("---" for _ in rows[0]) + " |")
    for r in rows[1:]:
        bold = "sufficient" in r[-1]
        cells = [f"**{_md_cell(c)}**" if bold and c else _md_cell(c) for c in r]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", f"**Verdict.** {v.summary}", ""]
    out += _noise_section(v)
    out += _details(report, recipe)
    return "\n".join(out) + "\n"


def noise_lines(verdict: Verdict) -> list[str]:
    """One line per workload: its noise estimate, how it was measured, from what."""
    out = [f"noise on {w}: {n.describe()}" for w, n in verdict.noise.items()]
    return out + [f"baseline on {w} {d.describe()}" for w, d in verdict.drift.items()]


def _noise_section(v: Verdict) -> list[str]:
    if not v.noise:
        return []
    out = [
        "## Noise (measured from this run)",
        "",
        "| workload | noise | method | n | groups | largest from | band |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for w, n in v.noise.items():
        if n.value is None or n.band is None:
            out.append(
                f"| {_md_cell(w)} | unknown | {n.method} | 0 | 0 | no two values under the "
                f"same settings | none: nothing called (run with `{HOW_TO_MEASURE}`) |"
            )
            continue
        out.append(
            f"| {_md_cell(w)} | {n.value:.1%} | {n.method} | {n.n} | {n.groups} | "
            f"{_md_cell(n.source)} | {n.band:.1%} (floor {n.floor:.0%}) |"
        )
    out += [""] + [f"- Baseline on {_md_cell(w)} {d.describe()}." for w, d in v.drift.items()]
    return [*out, ""] if v.drift else out


def _md_cell(text: str) -> str:
    """A table cell: a ``|`` in a name or label would split the row."""
    return text.replace("|", "\\|").replace("\n", " ")


def _details(report: MatrixReport, recipe: Recipe) -> list[str]:
    out = ["## Arms", ""]
    arms = {a.name: a for a in recipe.all_arms()}
    for a in report.verdict.arms:
        arm = arms.get(a.name)
        change = arm.describe() if arm else ""
        effect = a.effect.value.replace("_", " ")
        out.append(f"- `{a.name}` ({change}): **{effect}**: {a.detail}")
    failing = [r for r in report.cells if r.root_cause is not None]
    causes = Counter(r.root_cause.key for r in failing if r.root_cause is not None)
    if causes:
        out += ["", "## Root causes of failing cells", ""]
        for sig, n in causes.most_common():
            example = next(r for r in failing if r.root_cause and r.root_cause.key == sig)
            rc = example.root_cause
            assert rc is not None
            known = f" — known: {rc.known}" if rc.known else ""
            known += f"; whose fault: {blame_text(rc.origin.value, rc.package, rc.why)}"
            step = f"; next: `{rc.next_step}`" if rc.next_step else ""
            shown = sig or "(no root cause in the log)"
            out.append(f"- {n} cell(s): `{shown}`{known}{step} (e.g. `{example.id}`)")
    hung = [r for r in report.cells if r.hang is not None]
    if hung:
        out += ["", "## Cells killed at their timeout: where they hung", ""]
        out += [
            f"- `{r.id}`: {_md_cell(r.hang.describe())} (stacks: `cells/{r.id}/hang/`)"
            for r in hung
            if r.hang is not None
        ]
    errors = [r for r in report.cells if r.outcome is Outcome.ERROR]
    if errors:
        out += ["", "## Errors (no result a verdict can use: see each reason)", ""]
        out += [f"- `{r.id}`: {r.reason.splitlines()[0] if r.reason else ''}" for r in errors]
    warned = [r for r in report.cells if r.warnings]
    if warned:
        out += ["", "## Warnings (figures that ran as asked but are weak evidence)", ""]
        out += [f"- `{r.id}`: {w}" for r in warned for w in r.warnings]
    out += [
        "",
        "## Legs",
        "",
        "| leg | path | lock | vllm | torch | python | pins |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for env in report.envs.values():
        st = env.stack
        torch = st.torch or "—"
        cuda = cuda_build(st.torch, st.torch_cuda)
        if st.torch and cuda != "None":
            torch += f" (CUDA {cuda})"
        out.append(
            f"| {_md_cell(env.leg)} | `{env.path}` | `{env.lock_hash}` | "
            f"{st.vllm or '—'} | {torch} | {st.python} | "
            f"{', '.join(env.pins) or '—'} |"
        )
    if report.interrupted:
        out += [
            "",
            "**Interrupted.** Resume with "
            f"`vllmdiag matrix {report.source} --resume {report.run_dir}`.",
        ]
    return out


def text(report: MatrixReport) -> str:
    rows = table_rows(report.verdict, report.workloads)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"{report.recipe}: {report.question}", ""]
    for n, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += ["", report.verdict.summary]
    if report.verdict.noise:
        lines += ["", *noise_lines(report.verdict)]
    return "\n".join(lines) + "\n"


def ended_processes(run: RunDir) -> list[str]:
    """One line per journaled end of processes left running: a cell's own (swept when it
    ended) and an earlier, killed run's (when this one started or resumed)."""
    out = []
    for end in ended(run.journal()):
        listed = ", ".join(str(p) for p in end.pids)
        if end.cell is not None:
            out.append(
                f"- `{end.cell}`: ended {len(end.pids)} process(es) it started that outlived "
                f"it (pids {listed})"
            )
        else:
            out.append(
                f"- before the cells ran: ended {len(end.pids)} process(es) an earlier, killed "
                f"run left running (pids {listed})"
            )
    return out


def write_summaries(run: RunDir, report: MatrixReport, recipe: Recipe) -> None:
    """Shareable files: no secret, no home path (``~``), no host or user name."""
    md = markdown(report, recipe)
    lines = ended_processes(run)
    if lines:
        md += "\n## Processes ended\n\n" + "\n".join(lines) + "\n"
    run.write_summaries(md, text(report))
    run.write_verdict(report.verdict)
