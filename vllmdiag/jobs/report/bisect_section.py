"""A bisection in the drafted issue: the result ``vllmdiag bisect --json`` printed, or the
journal a finished bisection wrote (its last line holds the result). By commit, the first
bad commit is named with its subject, date and pull request, beside the last good one,
the steps, the range left where steps were skipped and the lines that reproduce both
sides; by release, the first bad and last good releases."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vllmdiag import codec
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.bisect.commit_info import CommitInfo
from vllmdiag.jobs.bisect.commit_results import CommitBisectResult
from vllmdiag.jobs.bisect.results import BisectResult
from vllmdiag.jobs.report import md
from vllmdiag.services.atomic import MAX_JSON_BYTES
from vllmdiag.services.config.source import read_text

BisectEvidence = CommitBisectResult | BisectResult
_HINT = "save it with: vllmdiag bisect ... --json > bisect.json (or give its journal.jsonl)"


def load_bisect(path: Path) -> BisectEvidence:
    where = str(path)
    # Bounded: a FIFO, a device or a huge file is refused before a byte is parsed.
    text = read_text(path, what="bisect result", limit=MAX_JSON_BYTES)
    data: Any = None
    try:
        data = json.loads(text)
    except RecursionError:
        raise VllmdiagError(
            "not a bisect result: JSON nested too deep", where=where, hint=_HINT
        ) from None
    except ValueError:
        for n, line in enumerate(text.splitlines(), 1):  # a journal: its result line
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(record, Mapping) and "result" in record:
                data, where = record["result"], f"{path}:{n}"
        if data is None:
            raise VllmdiagError(
                "neither a bisect result nor the journal of a finished bisection",
                where=where,
                hint="let the bisection finish (run it again: it resumes), then give its "
                "journal or its --json output",
            ) from None
    if isinstance(data, Mapping) and "error" in data and "first_bad" not in data:
        raise VllmdiagError(
            f"this file holds the error a bisect run printed: {data.get('error')}",
            where=where,
            hint="fix that run, then save its result again",
        )
    kind: type[BisectEvidence] = (
        CommitBisectResult
        if isinstance(data, Mapping) and data.get("by") == "commit"
        else BisectResult
    )
    try:
        return codec.load(kind, data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise VllmdiagError(
            f"not a bisect result: {loc}: {err['msg']}", where=where, hint=_HINT
        ) from None


def _commit(c: CommitInfo) -> str:
    pr = f", PR #{c.pr}" if c.pr is not None else ""
    return f"{md.code(c.commit)} {md.code(c.subject)} ({c.date}{pr})"


def headline(result: BisectEvidence) -> str:
    """The sentence the summary adds: where the bisection put the change."""
    if isinstance(result, BisectResult):
        return (
            f"Bisected over releases of {md.code(result.package)}: the first bad release is "
            f"{md.code(result.first_bad)}, the last good {md.code(result.last_good)}"
            + ("." if result.exact else " (not exact: releases between them were skipped).")
        )
    exact = "" if result.exact else f" or one of {len(result.range_left)} skipped before it"
    return (
        f"Bisected by commit on {md.code(result.package)}'s per-commit wheels: the first bad "
        f"commit is {_commit(result.first_bad)}{exact}."
    )


def section(result: BisectEvidence) -> str:
    if isinstance(result, BisectResult):
        rows = [
            [md.cell(s.version), s.verdict.value, md.cell(s.detail.splitlines()[-1][:80])]
            for s in result.steps
        ]
        return "\n".join([headline(result), "", md.table(["release", "verdict", "detail"], rows)])
    subjects = {c.commit: c.subject for c in result.commits}
    rows = [
        [
            md.code(s.version[:10]),
            md.cell(subjects.get(s.version, "")[:70]),
            s.verdict.value,
            md.cell(", ".join(f"{v:g}" for v in s.values)),
        ]
        for s in result.steps
    ]
    out = [
        f"- First bad commit: {_commit(result.first_bad)}",
        f"- Last good commit: {_commit(result.last_good)}",
        f"- {md.plural(len(result.steps), 'step')} over "
        f"{md.plural(len(result.commits), 'commit')} of {md.code(result.main_ref)}, "
        f"wheels from {md.code(result.wheels)}"
        + (f" (variant {md.code(result.variant)})" if result.variant else ""),
    ]
    if result.metric is not None and result.threshold is not None:
        how = "derived from the two ends" if result.derived else "given"
        base = f"{result.baseline:g}" if result.baseline is not None else "none"
        out.append(
            f"- Metric {md.code(result.metric)}: good end {base}, threshold "
            f"{result.threshold:g} ({how})"
        )
    if not result.exact:
        left = ", ".join(md.code(c.commit[:10]) for c in result.range_left)
        out.append(f"- Not exact: the change is in the skipped commits {left} or the first bad")
    out += ["", md.table(["commit", "subject", "verdict", "values"], rows), ""]
    for side, rep in zip(("last good", "first bad"), result.reproduce, strict=False):
        out += [f"Reproduce the {side} side ({md.code(rep.commit[:10])}):", ""]
        out.append(md.fence("\n".join([*rep.install, rep.check]), "bash"))
    return "\n".join(out)
