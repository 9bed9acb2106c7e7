"""Build a :class:`RootCause` from each kind of evidence: an exception (link of a
traceback), a death line, a wrapper's quote, a refused command line. Each gets its
signature, its catalogue entry, whose fault it is (:mod:`vllmdiag.readers.triage.blame`) and a
reason saying how it was read."""

from __future__ import annotations

import dataclasses
import re

from vllmdiag.model.root_cause import Origin
from vllmdiag.readers.triage import relays
from vllmdiag.readers.triage.blame import Seen, decide
from vllmdiag.readers.triage.catalogue import Catalogue, Hit
from vllmdiag.readers.triage.deaths import Death
from vllmdiag.readers.triage.lines import ray_task_of, without_neighbours
from vllmdiag.readers.triage.origin import place_of
from vllmdiag.readers.triage.raydeaths import ActorDeath
from vllmdiag.readers.triage.signature import signature
from vllmdiag.readers.triage.tracebacks import Link, Traceback
from vllmdiag.readers.triage.triaged import Evidence, EvidenceKind, RootCause

_RAY_ACTOR = re.compile(r"ray::(?P<actor>\w+)\.[\w.]+\(\) \(pid=(?P<pid>\d+)")
#: torch's compile wrappers that carry, in their own message, the error that ended the
#: run (``torch._dynamo.exc.InternalTorchDynamoError: ImportError: ..``): that error's line.
_CARRIER = re.compile(r"(?:^|\.)InternalTorchDynamoError$")
#: Lines a logger writes above a traceback that announce it without saying what failed,
#: and progress lines (``Starting ...``): never a root cause by themselves.
_STOCK = re.compile(
    r"^(?:Process [\w-]+|Exception in [\w .-]+|Error (?:in|executing|while|during) [^:]*"
    r"|(?:Unhandled|Uncaught) exception[^:]*|Task exception was never retrieved"
    r"|EngineCore (?:failed to start|hit an exception|encountered a fatal error)"
    r"|AsyncLLM output_handler failed"
    r"|WorkerProc (?:hit an exception|failed to start)[^:]*"
    r"|An? (?:error|exception) (?:occurred|was raised|happened)[^:]*|Traceback.*)[.:!]?$"
    r"|:$"
    r"|(?:\.{3}|…)$"  # a progress or launcher's prompt (``checking the log for Error...``)
    r"|^Error executing job with overrides:"  # hydra's announcement (verl, NeMo)
    # a framework's record of the step that failed, not why (ms-swift's ``[ERROR:swift]
    # Method execution failed: infer``, vllm-omni's ``[StageRuntime] Stage initialization
    # failed; shutting down ..``)
    r"|^(?:\[[^\]]+\] )?(?:Method|Stage|Task|Job|Step) (?:execution|initiali[sz]ation) failed"
    r"(?:: [\w.]+)?(?:[;,] .*)?$"
)
#: Words an error statement has (``No module named ..``, ``Timed out after ..``, ``.. is
#: only supported ..``); a logger's context line (``OpenAI async completion``) has none.
_SAYS_WHAT_FAILED = re.compile(
    r"(?i)(?:error|fail|\bnot\b|\bno\b|cannot|can't|unable|invalid|unsupported|\bonly\b"
    r"|\bmust\b|timed? ?out|missing|denied|refused|exceed|too (?:large|long|many|small)"
    r"|out of|killed|died|unknown|unexpected|illegal|mismatch)"
)
#: A pydantic v2 validation error's body (``[type=value_error, input_value=..]``): its
#: header line (``pydantic_core._pydantic_core.ValidationError: 1 validation error for
#: ModelConfig``) is what a cut paste loses.
_PYDANTIC_BODY = re.compile(r"\[type=\w+, input_value=")
#: What ``logger.error(e)`` writes of an exception whose ``str`` is no sentence: a
#: ``KeyError``'s quoted key (``'layers.0.mlp.down_proj.weight.absmax'``).
_QUOTED_KEY = re.compile(r"^'[^'\s]{3,}'$")
#: What a framework logs around an error it caught: its context, a colon, then the
#: error's own words (``Error provisioning model instance X: Failed to get ..``).
_CONTEXT_THEN_ERROR = re.compile(
    r"^(?:Error|Failed|Exception) (?:\w+ing|in|while|during|when)\b[^:]{0,100}: (?P<msg>\S.*)$"
)
#: What ``logger.error(repr(e))`` writes: ``IndexError('tuple index out of range')``.
_REPR_ERROR = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception))\((?P<q>['\"])(?P<msg>.*)(?P=q),?\)$"
)
PYDANTIC_ERROR = relays.PYDANTIC_ERROR


def hit(cat: Catalogue, link: Link, version: str | None) -> Hit | None:
    files = [f.file for f in link.frames]
    return match(cat, link.type, link.message, files, version, [f.func for f in link.frames])


def match(
    cat: Catalogue,
    typ: str,
    message: str,
    files: list[str],
    version: str | None,
    funcs: list[str] | None = None,
) -> Hit | None:
    values = {"vllm_version": version or "<version>"}
    raw = f"{typ}: {message}" if typ else message
    raiser = _raiser(files, funcs or [])
    return cat.match(signature(typ, message), raw, files, values, raiser=raiser)


def _raiser(files: list[str], funcs: list[str]) -> str:
    """The innermost frame as ``file:function`` (what a catalogue's ``raised_by`` reads)."""
    if not files:
        return ""
    func = funcs[len(files) - 1] if len(funcs) >= len(files) else ""
    return f"{files[-1].replace(chr(92), '/')}:{func}"


def _cause(
    cat: Catalogue,
    ev: Evidence,
    *,
    typ: str,
    message: str,
    process: str,
    lines: tuple[int, int],
    reason: str,
    evidence: EvidenceKind,
    raised_in: str | None,
    files: list[str] | None = None,
    funcs: list[str] | None = None,
    frames: tuple[str, ...] = (),
    where: tuple[str, str | None] | None = None,
    rule: tuple[str, str] | None = None,
    context: str = "",
    cut_stack: bool = False,
) -> RootCause:
    message = without_neighbours(message)
    h = match(cat, typ, message, files or [], ev.vllm_version, funcs or [])
    if h is None and context.strip():  # what the relaying line says around the error
        h = match(cat, "", context.strip(), files or [], ev.vllm_version, funcs or [])
    blame = decide(
        typ,
        message,
        files or [],
        funcs=funcs or [],
        rule=rule[0] if rule else h.entry.blame if h else None,
        rule_why=rule[1] if rule else h.why if h else None,
        where=where,
        tool_dirs=ev.tool_dirs,
        wrapper=ev.wrapper,
        seen=Seen(
            wrapper=ev.wrapper,
            framework=ev.framework,
            vllm_version=ev.vllm_version,
            vllm_change=ev.vllm_change,
            failed_plugin=ev.failed_plugin,
            tool_dirs=ev.tool_dirs,
            ray_task=ray_task_of(process),
        ),
        cut_stack=cut_stack,
    )
    return RootCause(
        type=typ,
        message=message,
        process=process,
        signature=signature(typ, message),
        known=h.name if h else None,
        next_step=h.next_step if h else None,
        lines=lines,
        meaning=h.meaning if h else None,
        reason=reason,
        frames=frames,
        evidence=evidence,
        origin=Origin(blame.origin),
        package=blame.package,
        advice=h.advice if h else None,
        why=blame.why,
        raised_in=raised_in,
    )


def from_link(
    tb: Traceback,
    link: Link,
    cat: Catalogue,
    ev: Evidence,
    label: str,
    cut: Traceback | None = None,
) -> RootCause:
    """The root cause an exception link names. ``cut``: frames alone printed below an
    exception line that has none (its own stack, the paste put apart)."""
    # a Ray task's remote traceback is read as headless when the task error was
    headless = tb.headless and (link is tb.links[0] or link.relation == "remote")
    if link.kind == "notice":
        why = [
            f"vLLM's note of an exception in {tb.process} (line {link.exc_line}); "
            "its type is not in view"
        ]
    elif headless:
        why = [
            f"earliest fatal exception line in the log, in process {tb.process} (line "
            f"{link.exc_line}); its 'Traceback' header is not in view"
        ]
    else:
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
        pos = [k for k in tb.links if k.relation != "remote"].index(link) + 1
        why.append(
            f"link {pos} of a chain of {len(tb.links) + tb.dropped_links}: "
            + ("the original exception" if pos == 1 else "the first one the catalogue knows")
        )
    if label == "follow-on":
        why.append(
            "only follow-on or handled errors found (interrupt, closed pipe, a plugin or "
            "request error vLLM went on from); the real cause may be missing from this log"
        )
    if label == "thread":
        why.append("only background-thread tracebacks found; taking the first")
    frames = list(link.frames)
    if not frames and cut is not None:
        frames = [f for k in cut.links for f in k.frames]
        why.append(
            f"its frames are those printed below it (from line {cut.first_line}), cut before "
            "their exception line"
        )
    place, package = place_of(frames, ev.tool_dirs)
    raised_in = _raised_in(place, package)
    if raised_in:
        why.append(f"raised in {_in_words(raised_in)}")
    typ, message = link.type, link.message
    carried = relays.TYPED_WORDS.match(message) if _CARRIER.search(typ) else None
    if carried is not None:
        why.append(f"the error torch's {link.short_type} carries")
        typ, message = carried["type"], carried["msg"]
    return _cause(
        cat,
        ev,
        typ=typ,
        message=message,
        process=process,
        lines=(link.start_line, link.exc_line),
        reason="; ".join(why),
        # a traceback is in view when its header or its own frames are (a paste that cut
        # the header keeps the stack); an exception line alone, or vLLM's note, is not
        evidence="exception-line"
        if (headless and not link.frames) or link.kind == "notice"
        else "traceback",
        raised_in=raised_in,
        files=[f.file for f in frames],
        funcs=[f.func for f in frames],
        frames=tuple(f"{f.file}:{f.line} in {f.func}" for f in frames[-3:]),
        cut_stack=cut is not None and not link.frames,
    )


def header_states_error(tb: Traceback) -> bool:
    """The line logged right above a traceback cut before its exception line states the
    error itself (``logger.error(exc, exc_info=True)`` writes the message, then the
    traceback): an error-level or raw line, not a stock announcement."""
    head = tb.header.strip()
    if not tb.header_error or len(head) < 8 or not any(c.isalpha() for c in head):
        return False
    if _QUOTED_KEY.match(head) or _REPR_ERROR.match(head):
        return True
    return _STOCK.search(head) is None and _SAYS_WHAT_FAILED.search(head) is not None


def from_header(tb: Traceback, cat: Catalogue, ev: Evidence) -> RootCause:
    head = tb.header.strip()
    typ = PYDANTIC_ERROR if _PYDANTIC_BODY.search(head) else ""
    logged = _REPR_ERROR.match(head)
    context = _CONTEXT_THEN_ERROR.match(head)
    if logged is not None:  # the exception's repr: its type and message
        typ, head = logged["type"], logged["msg"]
    elif context is not None:  # a framework's context, then the error's own words
        head = context["msg"]
    what = "its frames" if tb.headless else "a traceback"
    at = tb.header_line or tb.first_line
    why = (
        f"the error {tb.process} logged on line {at}, right above {what} cut before the "
        "exception line"
    )
    if typ:
        why += "; its body is a pydantic validation error whose header line is cut"
    frames = [f for k in tb.links for f in k.frames]
    place, package = place_of(frames, ev.tool_dirs)
    raised_in = _raised_in(place, package)
    if raised_in:
        why += f"; its innermost frame in view is in {_in_words(raised_in)}"
    return _cause(
        cat,
        ev,
        typ=typ,
        message=head,
        process=tb.process,
        lines=(at, at),
        reason=why,
        evidence="exception-line" if tb.headless else "traceback",
        raised_in=raised_in,
        files=[f.file for f in frames],
        funcs=[f.func for f in frames],
        frames=tuple(f"{f.file}:{f.line} in {f.func}" for f in frames[-3:]),
        cut_stack=True,
    )


def from_relay(ev: Evidence, cat: Catalogue, cut: Traceback | None = None) -> RootCause:
    """The error a line relays or quotes. ``cut``: a traceback of the log cut before its
    exception line, whose frames are the quoted error's (the paste put the error's line
    apart from its frames)."""
    r = ev.relay
    assert r is not None
    frames = [f for k in cut.links for f in k.frames] if cut is not None and r.own else []
    files = [f.file for f in frames] or [f for f, _ in r.frames]
    funcs = [f.func for f in frames] or [fn for _, fn in r.frames]
    body = r.type == PYDANTIC_ERROR or r.own  # the error's own line, not a relay of it
    why = (
        f"a pydantic validation error's own line (line {r.line}); its header line, which "
        "names the error, is not in view"
        if r.type == PYDANTIC_ERROR
        else f"the error's own words, quoted on line {r.line} without a traceback"
        if r.own
        else f"the error {r.process} relays on line {r.line}, without a traceback: the "
        "failing process's own output is not in view"
    )
    raised_in = None
    if frames:
        assert cut is not None
        place, package = place_of(frames, ev.tool_dirs)
        raised_in = _raised_in(place, package)
        why += (
            f"; its frames are those of the traceback cut before its exception line (line "
            f"{cut.first_line})" + (f", raised in {_in_words(raised_in)}" if raised_in else "")
        )
    elif r.frames:
        raised_in = _raised_in(*place_of([_File(f) for f in files], ev.tool_dirs))
        why += "; its frames are those the relaying line lists after it" + (
            f", raised in {_in_words(raised_in)}" if raised_in else ""
        )
    message = r.message
    if r.pip and ev.pip_causes:
        # a report whose header the paste cut starts with its own first cause
        message = (
            ev.pip_causes if ev.pip_causes.startswith(message) else f"{message} {ev.pip_causes}"
        )
        why += "; pip's list of what conflicts follows it"
    return _cause(
        cat,
        ev,
        typ=r.type,
        message=message,
        process=r.process,
        lines=(r.line, r.line),
        reason=why,
        # a traceback escaped into one string, quoted whole: its frames are in view
        evidence=("traceback" if r.frames else "exception-line")
        if r.own
        else ("exception-line" if body else "wrapper-message"),
        raised_in=raised_in,
        rule=ev.pip_blame if r.pip else None,
        files=files,
        funcs=funcs,
        frames=tuple(f"{f.file}:{f.line} in {f.func}" for f in frames[-3:])
        or tuple(f"{f} in {fn}" for f, fn in r.frames[-3:]),
        context=r.context,
    )


@dataclasses.dataclass(frozen=True)
class _File:
    """A frame known only by its file (what ``place_of`` reads)."""

    file: str


def from_death(d: Death, cat: Catalogue, ev: Evidence) -> RootCause:
    why = (
        f"no Python exception in view; process {d.process} reported a native library's error "
        f"(line {d.line})"
        if d.strength == "native"
        else f"no Python exception in view; process {d.process} died (line {d.line})"
    )
    if d.strength == "follow-on":
        why += "; a follow-on death (killed by its parent, or a teardown): the cause may be missing"
    where = (d.origin, d.package) if d.origin in ("vllm", "dependency", "user", "tool") else None
    rule = None
    if ev.completed_at is not None and d.line > ev.completed_at and d.origin == "vllm":
        why += f"; every prompt had completed (line {ev.completed_at}) before it died"
        rule = (
            "vllm",
            "vLLM's engine died after every prompt had completed: a defect in its "
            "shutdown, not the run's settings or machine",
        )
    return _cause(
        cat,
        ev,
        typ="",
        message=d.message,
        process=d.process,
        lines=(d.line, d.line),
        reason=why,
        evidence="death-line",
        raised_in=_raised_in(*where) if where else None,
        frames=tuple(f"{f.file}:{f.line}" for f in d.frames[:3]),
        where=where,
        rule=rule,
    )


def from_actor_death(
    tb: Traceback, link: Link, died: ActorDeath, cat: Catalogue, ev: Evidence
) -> RootCause:
    why = (
        f"Ray's account of the death of actor {died.process}, in the {link.short_type} that "
        f"{tb.process} received (line {link.exc_line}): that exception only relays the "
        "loss; the actor's own output is not in view"
    )
    return _cause(
        cat,
        ev,
        typ="",
        message=died.message,
        process=died.process,
        lines=(link.exc_line, link.exc_line),
        reason=why,
        evidence="death-line",
        raised_in=None,
    )


def from_quote(
    tb: Traceback, link: Link, inner: tuple[str, str], cat: Catalogue, ev: Evidence
) -> RootCause:
    typ, message = inner
    why = (
        f"read out of the wrapper {link.short_type} that {tb.process} raised (line "
        f"{link.exc_line}): the failing process's own traceback is not in view"
    )
    return _cause(
        cat,
        ev,
        typ=typ,
        message=message,
        process=tb.process,
        lines=(link.exc_line, link.exc_line),
        reason=why,
        evidence="wrapper-message",
        raised_in=None,
    )


def cli(err: tuple[int, str, str] | None, cat: Catalogue, ev: Evidence) -> RootCause:
    assert err is not None
    line, msg, prog = err
    return _cause(
        cat,
        ev,
        typ="CLI error",
        message=msg,
        process=prog,
        lines=(line, line),
        reason=f"the command line was refused before anything ran (line {line})",
        evidence="cli-error",
        raised_in=None,
        rule=_cli_rule(msg, ev),
    )


#: A Python list's or dict's repr as an argument's value (``--common-configs ['model',
#: 'block-size']``): no one types that; a program built the command line.
_REPR_VALUE = re.compile(r"\[(?:'[^']*'|\"[^\"]*\")(?:, (?:'[^']*'|\"[^\"]*\"))*\]|\{'[\w-]+': ")


def _cli_rule(msg: str, ev: Evidence) -> tuple[str, str] | None:
    """Whose a refused command line is, where the log shows who built it: a wrapper
    named in the log, or a value only a program writes (then which one is not in view);
    None: the catalogue's reading (the user's own command)."""
    if ev.wrapper:
        return (
            f"caller:{ev.wrapper}",
            f"{ev.wrapper} built this vLLM command line, and vLLM refused arguments it passed",
        )
    if _REPR_VALUE.search(msg):
        return (
            "unknown",
            "the refused argument's value is a Python list's or dict's repr, which a program "
            "writes, not a person: a tool built this command line, and which one is not in "
            "view",
        )
    return None


def _raised_in(place: str | None, package: str | None) -> str | None:
    """Where it was raised: a package's name, or ``script`` (the workload's own file)."""
    if place is None:
        return None
    return "script" if place == "user" else (package or place)


def _in_words(raised_in: str) -> str:
    if raised_in == "script":
        return "the workload's own script"
    return "vLLM's code" if raised_in == "vllm" else f"{raised_in}'s code"


def with_reason(cause: RootCause, reason: str) -> RootCause:
    return dataclasses.replace(cause, reason=reason)
