"""Choose the root cause among a log's tracebacks (pure: no I/O).

Rules, in order:
1. Identical tracebacks (vLLM logs one and Python prints it again) count once.
2. Tracebacks that did not end the run are set aside: logged below ERROR, uncaught in a
   background thread, or a catalogue entry marked benign (the usage-stats ``cpuinfo``
   JSON error).
3. In each remaining traceback the root link is the original exception of a chain (or the
   remote one of a Ray task error), skipping vLLM's wrappers (``Engine core
   initialization failed``, ``Worker failed with error``, ``EngineDeadError``, ...).
4. The root cause is the earliest such link in the log: the process that failed first.
   Follow-on errors (``KeyboardInterrupt``, a closed pipe) count only if nothing else does.
5. With only wrappers left, the wrapper's own text is used when it quotes the error; a
   fatal signal line (segfault) beats that.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from vllmdiag.triage.catalogue import Catalogue, Hit
from vllmdiag.triage.fallback import without_traceback
from vllmdiag.triage.model import Evidence, LogTriage, RootCause, Skipped
from vllmdiag.triage.signature import signature
from vllmdiag.triage.tracebacks import Link, Traceback

WRAPPER = re.compile(
    r"Engine core initialization failed|Worker failed with error|EngineDeadError"
    r"|EngineCore encountered an issue|RayTaskError\(|Engine process failed to start"
    r"|WorkerProc initialization failed|EngineGenerateError|Failed core proc"
)
_RAY_ACTOR = re.compile(r"ray::(?P<actor>\w+)\.[\w.]+\(\) \(pid=(?P<pid>\d+)")
#: Messages vLLM logs with a stack for errors it handles and goes on from (one plugin,
#: one request): a root cause only when nothing else is.
HANDLED = re.compile(
    r"Failed to load plugin|Error in (?:chat completion|completion|preprocessing)"
    r"|Error in loading|Failed to (?:import|register)"
)
SECONDARY = frozenset(
    {
        "KeyboardInterrupt",
        "SystemExit",
        "EOFError",
        "BrokenPipeError",
        "ConnectionResetError",
        "ConnectionRefusedError",
        "CancelledError",
        "ContextTerminated",
        "ZMQError",
    }
)


def is_wrapper(link: Link) -> bool:
    return bool(WRAPPER.search(f"{link.type}: {link.message}"))


def ordered_links(tb: Traceback) -> list[Link]:
    """Links in root-first order: a Ray task's remote traceback first, then Python's
    chain in print order (the original exception is printed first)."""
    remote = [k for k in tb.links if k.relation == "remote"]
    return list(reversed(remote)) + [k for k in tb.links if k.relation != "remote"]


def _hit(cat: Catalogue, link: Link, version: str | None) -> Hit | None:
    values = {"vllm_version": version or "<version>"}
    return cat.match(
        signature(link.type, link.message),
        f"{link.type}: {link.message}",
        (f.file for f in link.frames),
        values,
    )


def _benign_reason(tb: Traceback, cat: Catalogue, version: str | None) -> str | None:
    for link in tb.links:
        hit = _hit(cat, link, version) if link.type else None
        if hit is not None and hit.entry.benign:
            return f"known harmless ({hit.name}): {hit.meaning}"
    if tb.level is not None and tb.level not in ("ERROR", "CRITICAL"):
        return f"logged at {tb.level} level: the process went on"
    if tb.header.startswith("Exception in thread"):
        return f"uncaught in a background thread ({tb.header.rstrip(':')}): the process went on"
    return None


def _root_link(links: list[Link], cat: Catalogue, version: str | None) -> Link | None:
    """The first non-wrapper link; a later one of the same chain when only it is known
    (transformers turns a ``KeyError`` into the ``ValueError`` that explains it)."""
    real = [k for k in links if not is_wrapper(k)]
    if not real:
        return None
    if _hit(cat, real[0], version) is None:
        for k in real[1:]:
            if _hit(cat, k, version) is not None:
                return k
    return real[0]


def _skipped(tb: Traceback, link: Link, why: str) -> Skipped:
    return Skipped(link.type, link.message, tb.process, link.exc_line, why)


def choose(
    tracebacks: Sequence[Traceback], cat: Catalogue, ev: Evidence, path: str = ""
) -> LogTriage:
    distinct: dict[tuple[object, ...], Traceback] = {}
    for tb in tracebacks:
        distinct.setdefault(tb.key(), tb)
    tbs = sorted(distinct.values(), key=lambda t: t.first_line)
    benign: list[Skipped] = []
    wrappers: list[Skipped] = []
    primary: list[tuple[Traceback, Link]] = []
    secondary: list[tuple[Traceback, Link]] = []
    threads: list[tuple[Traceback, Link]] = []
    truncated = ev.ends_mid_line
    for tb in tbs:
        links = [k for k in ordered_links(tb) if k.type]
        if not tb.complete:
            truncated = True
        if not links:
            continue
        why = _benign_reason(tb, cat, ev.vllm_version)
        if why is not None:
            benign.append(_skipped(tb, links[0], why))
            if why.startswith("uncaught in a background thread"):
                threads.append((tb, links[0]))
            continue
        root = _root_link(links, cat, ev.vllm_version)
        for k in links:
            if is_wrapper(k):
                wrappers.append(_skipped(tb, k, "a wrapper the parent raises; the cause is above"))
        if root is None:
            continue
        handled = HANDLED.search(tb.header) is not None
        bucket = secondary if root.short_type in SECONDARY or handled else primary
        bucket.append((tb, root))
    for bucket, label in ((primary, ""), (secondary, "follow-on"), (threads, "thread")):
        if bucket:
            tb, link = min(bucket, key=lambda p: p[1].exc_line)
            cause = _root(tb, link, cat, ev, len(wrappers), len(benign), label)
            return LogTriage(
                path,
                cause,
                tuple(wrappers),
                len(tbs),
                None,
                tuple(benign),
                ev.vllm_version,
                truncated,
                ev.lines,
            )
    fallback, note = without_traceback(wrappers, ev, cat, bool(tbs), truncated)
    return LogTriage(
        path,
        fallback,
        tuple(wrappers),
        len(tbs),
        note,
        tuple(benign),
        ev.vllm_version,
        truncated,
        ev.lines,
    )


def _root(
    tb: Traceback,
    link: Link,
    cat: Catalogue,
    ev: Evidence,
    n_wrap: int,
    n_benign: int,
    label: str,
) -> RootCause:
    hit = _hit(cat, link, ev.vllm_version)
    why = [
        f"earliest fatal exception in the log, in process {tb.process}"
        f" (lines {link.start_line}-{link.exc_line})"
    ]
    process = tb.process
    if link.relation == "remote":
        outer = tb.links[tb.links.index(link) - 1]
        actor = _RAY_ACTOR.search(outer.message)
        if actor:
            process = f"{actor['actor']} pid={actor['pid']}"
        why.append(
            f"the remote traceback a Ray task error carries (raised in {process}, "
            f"reported by {tb.process})"
        )
    elif len(tb.links) > 1:
        pos = ordered_links(tb).index(link) + 1
        why.append(
            f"link {pos} of a chain of {len(tb.links)}: "
            + ("the original exception" if pos == 1 else "the first one the catalogue knows")
        )
    if n_wrap:
        why.append(f"{n_wrap} wrapper(s) skipped")
    if n_benign:
        why.append(f"{n_benign} harmless traceback(s) skipped")
    if label == "follow-on":
        why.append(
            "only follow-on or handled errors found (interrupt, closed pipe, a plugin or "
            "request error vLLM went on from); the real cause may be missing from this log"
        )
    if label == "thread":
        why.append("only background-thread tracebacks found; taking the first")
    frames = tuple(f"{f.file}:{f.line} in {f.func}" for f in link.frames[-3:])
    return RootCause(
        type=link.type,
        message=link.message,
        process=process,
        signature=signature(link.type, link.message),
        known=hit.name if hit else None,
        next_step=hit.next_step if hit else None,
        lines=(link.start_line, link.exc_line),
        meaning=hit.meaning if hit else None,
        reason="; ".join(why),
        frames=frames,
    )
