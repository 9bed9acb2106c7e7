"""The matrix written for people: ``summary.md`` and ``summary.txt``, plus ``verdict.json``.

The table has the shape of the seeds' diag_silent4 table: one row per arm (baseline
first, controls last), one column per workload, and the effect.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from vllmdiag import codec, redact
from vllmdiag.journal import RunDir
from vllmdiag.model.outcome import Outcome
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.verdict import Square, Verdict
from vllmdiag.triage.blame import blame_text

if TYPE_CHECKING:
    from vllmdiag.matrix.job import MatrixReport


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
    out += _details(report, recipe)
    return "\n".join(out) + "\n"


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
            known += f"; whose fault: {blame_text(rc.origin, rc.package, rc.why)}"
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
        if st.torch_cuda:
            torch += f" (CUDA {st.torch_cuda})"
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
    return "\n".join(lines) + "\n"


def write_summaries(run: RunDir, report: MatrixReport, recipe: Recipe) -> None:
    """Shareable files: no secret, no home path (``~``), no host or user name."""
    run.write_text("summary.md", redact.shareable(markdown(report, recipe)))
    run.write_text("summary.txt", redact.shareable(text(report)))
    run.write_json("verdict.json", redact.shareable_data(codec.dump(report.verdict)))
