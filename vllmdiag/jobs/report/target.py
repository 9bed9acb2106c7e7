"""Where the issue goes: the project whose defect the evidence shows, and why.

A window in which a consumer's declared range admits versions without the symbol, tied
to this failure (the failing leg has one of those versions, or the root cause names the
symbol), is a dependency-metadata defect: it goes to the consumer, as vLLM 0.18.0's
range of nvidia-cutlass-dsl was reported in the B200/H200 ablation this project grew out
of. Otherwise whose fault triage says it is (``origin``) decides: ``vllm`` → vLLM's bug
form; ``dependency`` → that package; ``caller`` → the framework that drives vLLM wrongly
(its tracker); ``config`` and ``environment`` → no upstream issue at all (the draft says
what to change and why it is not a bug); ``tool`` → vllmdiag; a failure whose fault the
log does not show → the dependency whose pin made it pass, if an arm showed one; else
nobody can be named.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.utils import canonicalize_name

from vllmdiag.jobs.report import freeze
from vllmdiag.jobs.report.case import Case
from vllmdiag.jobs.report.draft import Target, TargetKind, Template
from vllmdiag.jobs.window import ConsumerReport, WindowResult
from vllmdiag.model.root_cause import Origin


@dataclass(frozen=True)
class Decision:
    target: Target
    #: The window's consumer whose declared range the report is about (metadata only).
    consumer: ConsumerReport | None = None


def choose(case: Case, window: WindowResult | None) -> Decision:
    versions = freeze.read(case.env.freeze).versions if case.env is not None else {}
    aside = ""
    if window is not None:
        decided = _metadata(case, window, versions)
        if isinstance(decided, Decision):
            return decided
        aside = decided
    target = _by_origin(case, versions)
    if aside:
        target = Target(target.project, target.kind, target.template, f"{target.reason} {aside}")
    return Decision(target)


def _metadata(case: Case, window: WindowResult, versions: dict[str, str]) -> Decision | str:
    """The metadata decision, or why the window does not decide (said in the reason)."""
    pkg = canonicalize_name(window.package)
    attr = window.symbol.rsplit(".", 1)[-1]
    have = versions.get(pkg)
    defective = [c for c in window.consumers if c.admitted_without_symbol]
    if not defective:
        return (
            f"The window shows no consumer's declared range admitting a {window.package} "
            f"without {window.symbol}."
        )
    named_symbol = attr in case.signature
    in_window = have is not None and have in defective[0].admitted_without_symbol
    if not named_symbol and not in_window:
        return (
            f"The window ({window.package}, {window.symbol}) does not explain this failure: "
            f"the failing leg has {window.package} {have or '(not installed)'}, and the root "
            f"cause does not name {attr}."
        )
    consumer = next(
        (c for c in defective if have is not None and have in c.admitted_without_symbol),
        defective[0],
    )
    name = freeze.pin_name(consumer.requirement)
    without = consumer.admitted_without_symbol
    span = without[0] if len(without) == 1 else f"{without[0]} … {without[-1]}"
    ties = []
    if in_window:
        ties.append(f"the failing leg has {window.package} {have}, one of them")
    if named_symbol:
        ties.append(f"the root cause is the missing {attr}")
    reason = (
        f"{consumer.requirement} declares {window.package}{consumer.declared or ''}, which "
        f"admits {len(without)} version(s) without {window.symbol} ({span}); "
        f"{'; '.join(ties)}. A declared range that admits versions the consumer cannot "
        f"work with is the consumer's dependency-metadata defect: it goes to {name}."
    )
    template = Template.VLLM_BUG if name == "vllm" else Template.GENERIC
    return Decision(Target(name, TargetKind.DEPENDENCY_METADATA, template, reason), consumer)


def _by_origin(case: Case, versions: dict[str, str]) -> Target:
    cause = case.cause
    origin = cause.origin if cause is not None else Origin.UNKNOWN
    why = f" ({cause.why})" if cause is not None and cause.why else ""
    frame = f" ({cause.frames[-1]})" if cause is not None and cause.frames else ""
    pins = case.fix.pins if case.fix is not None else ()
    if origin in (Origin.CONFIG, Origin.ENVIRONMENT):
        whose = (
            "the user's own settings"
            if origin is Origin.CONFIG
            else "the machine it ran on (and what is installed there)"
        )
        return Target(
            "",
            TargetKind.NOT_A_BUG,
            Template.GENERIC,
            f"Not an upstream bug: the failure lies in {whose}{why}. No issue to file; "
            "change the setting instead.",
        )
    if origin is Origin.VLLM:
        return Target(
            "vllm",
            TargetKind.VLLM,
            Template.VLLM_BUG,
            f"The failure is vLLM's{why}; raised in vLLM's own code{frame}.",
        )
    if origin is Origin.CALLER and cause is not None and cause.package:
        return Target(
            freeze.distribution(cause.package, versions),
            TargetKind.CALLER,
            Template.GENERIC,
            f"{cause.package} drives vLLM and calls it wrongly{why}: the fix is in "
            f"{cause.package}, so the issue goes to its tracker.",
        )
    if origin is Origin.CALLER:
        return Target(
            "",
            TargetKind.NOT_A_BUG,
            Template.GENERIC,
            f"The workload's own script calls vLLM wrongly{why}: fix the script; no "
            "upstream issue.",
        )
    if origin is Origin.DEPENDENCY and cause is not None and cause.package:
        dist = freeze.distribution(cause.package, versions, [freeze.pin_name(p) for p in pins])
        have = versions.get(dist)
        return Target(
            dist,
            TargetKind.DEPENDENCY,
            Template.GENERIC,
            f"The failure is {cause.package}'s{why}, installed as "
            f"{dist} {have or '(version not recorded)'}"
            + (f"; the one sufficient change is the pin {pins[0]}" if pins else "")
            + "; no window ties it to a consumer's declared range.",
        )
    if origin is Origin.TOOL:
        return Target(
            "",
            TargetKind.UNDETERMINED,
            Template.GENERIC,
            "The root cause is in vllmdiag's own code: not an upstream defect.",
        )
    if pins:
        name = freeze.pin_name(pins[0])
        return Target(
            name,
            TargetKind.DEPENDENCY,
            Template.GENERIC,
            f"Whose fault it is the log does not show{why}{frame}, and the one sufficient "
            f"change is the pin {pins[0]}: a change in {name} broke it. Whether a consumer's "
            f"declared range admits the breaking versions is a window's question "
            f"(vllmdiag window {name} --symbol MODULE.ATTR --consumer PKG==VERSION).",
        )
    if case.env is not None and case.env.stack.vllm:
        return Target(
            "vllm",
            TargetKind.VLLM,
            Template.VLLM_BUG,
            f"The log places the failure in no project's code{why}; the failing program "
            f"runs vLLM {case.env.stack.vllm}.",
        )
    return Target(
        "",
        TargetKind.UNDETERMINED,
        Template.GENERIC,
        f"Whose fault it is the log does not show{why}{frame}, and no arm or window points "
        "at a project: review it before filing anywhere.",
    )
