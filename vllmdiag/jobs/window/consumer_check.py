"""``window --consumer``: the consumer's release and what it declares (read before any
probe, so a consumer that does not exist fails at once), then, once the versions are
known, today's resolve and the verdict on the declared range."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from vllmdiag.jobs.window import consumers as cons
from vllmdiag.jobs.window.declared_range import assess, conflicting
from vllmdiag.jobs.window.probe_result import ProbeStatus
from vllmdiag.jobs.window.results import ConsumerReport


@dataclass(frozen=True)
class ConsumerTarget:
    text: str
    requirement: Requirement
    release: str
    declared: str | None


def prepare(
    text: str,
    req: Requirement,
    package: str,
    python: str,
    index_url: str | None,
    exclude_newer: str | None,
) -> ConsumerTarget:
    """The consumer's release on the index and its ``Requires-Dist`` on ``package``."""
    release = cons.consumer_version(req, python, index_url, exclude_newer)
    meta = cons.release_metadata(req.name, release, python, index_url, where="--consumer")
    declared = cons.declared_specifier(cons.requirements_on(meta, package, python))
    return ConsumerTarget(text, req, release, declared)


def report(
    target: ConsumerTarget,
    *,
    package: str,
    symbol: str,
    python: str,
    index_url: str | None,
    exclude_newer: str | None,
    table: Sequence[tuple[Version, ProbeStatus]],
) -> ConsumerReport:
    """Today's resolve of the consumer (and as of ``exclude_newer``), and the verdict."""
    today = cons.fresh_resolve(target.text, python, exclude_newer=None, index_url=index_url)
    as_of = (
        cons.fresh_resolve(target.text, python, exclude_newer=exclude_newer, index_url=index_url)
        if exclude_newer
        else None
    )
    name = canonicalize_name(package)
    picked = today.pins.get(name)
    picked_as_of = as_of.pins.get(name) if as_of else None
    constrained = tuple(cons.constraints(today, package, python, index_url)) if picked else ()
    assessment = assess(
        consumer=f"{target.requirement.name}=={target.release}",
        package=package,
        symbol=symbol,
        declared=target.declared,
        rows=table,
        resolves_to=picked,
        as_of=(exclude_newer, picked_as_of) if exclude_newer and picked_as_of else None,
    )
    clash = conflicting([(f"{k.package}=={k.version}", k.requires) for k in constrained], table)
    if clash:
        more = "; ".join(clash)
        assessment = replace(assessment, verdict=f"{assessment.verdict} In today's resolve {more}.")
    return ConsumerReport.of(
        target.text,
        target.release,
        target.declared,
        assessment,
        resolves_to=picked,
        resolves_to_as_of=picked_as_of,
        constrained_by=constrained,
        resolve_error=today.error,
    )
