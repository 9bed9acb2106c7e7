"""The issue's title and its opening paragraph: what fails, how often, in what, what
makes it pass, and (for a metadata defect) the range and the bound to declare."""

from __future__ import annotations

import re

from vllmdiag.jobs.report import advice, freeze, md
from vllmdiag.jobs.report.case import Case
from vllmdiag.jobs.report.draft import Target, TargetKind, Template
from vllmdiag.jobs.report.target import Decision
from vllmdiag.jobs.window import WindowResult
from vllmdiag.model.verdict import ArmVerdict, Effect

#: The tool's two words, said once for a reader who does not know it.
WORDS = (
    "(Here a *cell* is one run of one workload under one configuration, and an *arm* is "
    "a change from the baseline configuration: one flag, environment variable or pinned "
    "package, or several together where the arm says it is compound.)"
)
#: A title longer than this loses the end of its signature.
TITLE_MAX = 140
VLLM_PREFIX = "[Bug]: "


def title(case: Case, decision: Decision, window: WindowResult | None) -> str:
    target = decision.target
    sig = short(case.signature)
    c = decision.consumer
    if target.kind is TargetKind.DEPENDENCY_METADATA and c is not None and window is not None:
        head = (
            f"{target.project} {c.release or ''} admits {window.package} "
            f"{md.span(c.admitted_without_symbol)}: "
        ).replace("  ", " ")
    elif target.kind is TargetKind.VLLM and case.env is not None and case.env.stack.vllm:
        head, sig = "", f"{sig} (vLLM {case.env.stack.vllm})"
    elif target.kind is TargetKind.DEPENDENCY:
        have = _version(case, target)
        head = f"{target.project} {have}: " if have else f"{target.project}: "
    elif target.kind is TargetKind.NOT_A_BUG:
        origin = case.cause.origin if case.cause is not None else "unknown"
        head = f"Not an upstream bug ({origin}): "
    elif target.kind is TargetKind.CALLER:
        head = f"{target.project} calls vLLM wrongly: "
    else:
        head = ""
    prefix = VLLM_PREFIX if target.template is Template.VLLM_BUG else ""
    return _cut(prefix + head + sig)


def short(signature: str) -> str:
    """The signature's type and the first sentence of its message."""
    exc, sep, message = signature.partition(": ")
    if not sep:
        return signature
    first = re.split(r"(?<=[.!?])\s", message, maxsplit=1)[0].rstrip(".")
    return f"{exc}: {first}"


def _version(case: Case, target: Target) -> str | None:
    return freeze.read(case.env.freeze).versions.get(target.project) if case.env else None


def _cut(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= TITLE_MAX:
        return text
    return text[: TITLE_MAX - 1].rsplit(" ", 1)[0] + "…"


def paragraph(case: Case, decision: Decision, window: WindowResult | None) -> str:
    run, cell = case.run, case.cell
    failing = case.failing_like(run)
    workloads = sorted({r.workload for r in failing})
    where = f"leg {md.code(cell.leg)}"
    if case.env is not None and case.env.stack.vllm:
        where += f", vLLM {case.env.stack.vllm}"
    out: list[str] = []
    if decision.target.kind is TargetKind.NOT_A_BUG:
        out.append(advice.paragraph(case))
    c = decision.consumer
    if decision.target.kind is TargetKind.DEPENDENCY_METADATA and c is not None and window:
        out.append(
            f"{md.code(c.requirement)} declares {md.code(window.package + (c.declared or ''))}, "
            f"which admits {md.plural(len(c.admitted_without_symbol), 'version')} without "
            f"{md.code(window.symbol)} ({md.span(c.admitted_without_symbol)})"
            + (f"; a fresh resolve picks {c.resolves_to}." if c.resolves_to else ".")
        )
    out.append(
        f"{md.plural(len(failing), 'cell')} of the matrix {md.code(run.name)} "
        f"({md.plural(len(workloads), 'workload')}: {', '.join(md.code(w) for w in workloads)}; "
        f"{where}) fail with {md.code(case.signature)}."
    )
    out += _fix_sentences(case)
    metadata = decision.target.kind is TargetKind.DEPENDENCY_METADATA
    if metadata and c is not None and window is not None and c.suggested_specifier:
        out.append(f"Suggested fix: declare {md.code(window.package + c.suggested_specifier)}.")
    out.append(WORDS)
    return " ".join(out)


def _fix_sentences(case: Case) -> list[str]:
    """What the arms showed, claiming no more than ran: arms an interrupted run never ran
    are named as not run, and compound arms are never called single-variable (the arm's
    detail says it is compound)."""
    verdict = case.run.verdict
    if verdict is None or not verdict.arms:
        return []
    tried = [a for a in verdict.arms if a.effect is not Effect.CONTROL]
    ran = [a for a in tried if a.effect is not Effect.NOT_RUN]
    missing = [md.code(a.name) for a in tried if a.effect is Effect.NOT_RUN]
    ruled = [md.code(a.name) for a in verdict.arms if a.effect is Effect.RULED_OUT]
    kind = _kind(ran)
    out = []
    fix = case.fix
    if not ran:
        out.append(f"None of the {md.plural(len(tried), 'arm')} ran.")
    elif fix is not None:
        change = fix.arm.describe() if fix.arm is not None else fix.verdict.name
        of = (
            f"Of {md.plural(len(ran), kind)} that ran"
            if missing
            else f"Of {md.plural(len(ran), kind)} tried"
        )
        out.append(f"{of}, {md.code(change)} is sufficient: it {fix.verdict.detail}.")
    else:
        tried_n = md.plural(len(ran), kind)
        out.append(f"None of {tried_n} {'that ran' if missing else 'tried'} is sufficient.")
    if missing:
        out.append(
            f"Not run (the run was interrupted): {', '.join(missing)}; nothing is concluded "
            "from them."
        )
    if ruled:
        out.append(f"Ruled out: {', '.join(ruled)}.")
    return out


def _kind(arms: list[ArmVerdict]) -> str:
    """How to call these arms: single-variable changes only when every one is."""
    if arms and all(a.single_variable for a in arms):
        return "single-variable change"
    if arms and not any(a.single_variable for a in arms):
        return "compound change"
    return "change"
