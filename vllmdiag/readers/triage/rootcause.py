"""Choose the root cause among what a log shows (pure: no I/O).

Candidates are the exceptions of the log's tracebacks (whole, headless or V0 notices),
the lines saying a process died, the errors a wrapper quotes and a refused command line.
Set aside first: identical copies, tracebacks that did not end the run (logged below
ERROR, a background thread, a catalogue entry marked benign), and vLLM's wrappers
(``Engine core initialization failed``, ``Worker failed with error``, ...); in a chain
the original exception stands for it (or the remote one of a Ray task error).

Then tiers, the earliest candidate of the first tier that has one wins (the process that
failed first):
0. exceptions, and strong death lines (a named process died, a fatal Python error,
   Ray's account of an actor's death in the ``ActorDiedError`` its receiver got);
1. bare signal and OOM-kill notices (``Segmentation fault``, ``Killed``), a native
   library's own error line (``CUDA Error: .. at x.cpp:62``), the error a
   wrapper quotes (the failing child's own output is not in view), the error message a
   process logged right above a traceback the paste cut before its exception line, and
   the error a process around vLLM relays on one line (see ``relays``);
2. a command line the program refused;
3. follow-on errors (an interrupt, a closed pipe, a plugin or request error vLLM went on
   from, pip's ``ResolutionImpossible`` under the conflict it reported) and follow-on
   deaths (exit -15: killed by its parent);
4. vLLM's ``EngineCore encountered a fatal error`` without its traceback;
5. tracebacks of background threads.

Where none of these is in view, the last of the log's final lines whose words the
catalogue knows as a failure is that error's own line (see ``alone``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vllmdiag.readers.triage import causes
from vllmdiag.readers.triage.alone import known_alone, marked_alone
from vllmdiag.readers.triage.catalogue import Catalogue
from vllmdiag.readers.triage.deaths import Death
from vllmdiag.readers.triage.fallback import WORKER_QUOTE, quoted, unknown_note
from vllmdiag.readers.triage.lines import MAIN
from vllmdiag.readers.triage.raydeaths import ActorDeath, actor_death
from vllmdiag.readers.triage.relays import LAZY_IMPORT_MARK, Relay
from vllmdiag.readers.triage.signature import signature
from vllmdiag.readers.triage.tracebacks import LISTED, Link, Traceback
from vllmdiag.readers.triage.triaged import Evidence, LogTriage, RootCause, Skipped

WRAPPER = re.compile(
    r"Engine core initialization failed|Worker failed with error|EngineDeadError"
    r"|EngineCore encountered an issue|RayTaskError(?:\(|: )|Engine process failed to start"
    r"|ActorDiedError: The actor died because of an error raised in its creation task"
    r"|WorkerProc initialization failed|EngineGenerateError|Failed core proc"
    # vLLM's LoRA manager re-raising what failed to load an adapter (``raise
    # RuntimeError(f"Loading lora {path} failed") from e``): the cause is above it (a
    # later release says why after a colon: that is the error)
    r"|\bLoading lora \S+ failed\s*(?:[.。]|$)"
    r"|^RuntimeError: Executor failed"
    r"|^(?:[\w.]*\.)?(?:Base)?ExceptionGroup: "  # its sub-exceptions follow
    # torch elastic's report that a child failed: its root-cause section says how
    r"|ChildFailedError: "
    # torch's compile wrapper: the error the backend raised is printed right below it
    r"|BackendCompilerFailed: backend='[^']+' raised:"
    # transformers' lazy import relaying, as often nested as modules import each other,
    # the error that broke an import (the innermost is quoted: ``fallback.quoted``)
    rf"|^RuntimeError: Failed to import [\w.]+ {LAZY_IMPORT_MARK}"
    # frameworks' summaries of a failure whose own error they printed before: distilabel's
    # pipeline, LiteLLM's mapping of a provider's error (``VLLMException - <its message>``)
    r"|Failed to load all the steps"
    # PaddleX's record of the error one of its pipeline's workers got
    r"|^\w*Error: Exception from the '[\w.-]+' worker: "
    r"|^litellm\.[\w.]*Error: .*?\b[A-Z]\w*Exception - "
    # Ray's wrappers of what failed in an actor's constructor or a Ray Data UDF, whose own
    # traceback follows (``raise .. from e``)
    r"|Exception raised in creation task: The actor died because of an error raised in its"
    r"|UserCodeException: Failed to process the following data block"
    # an HTTP client's record of the server's error answer: the body's message is the
    # server's error (OpenAI's client), or only the status is (a bare ``Request failed``)
    r"|^(?:openai\.)?\w*Error: Error code: \d{3} - \{"
    r"|^(?:[\w.]+\.)?\w*(?:Exception|Error): (?:HTTP )?[45]\d\d - \{"
    r"|^(?:[\w.]+\.)?\w*(?:Exception|Error): Request failed: [45]\d\d\b"
    r"|^(?:[\w.]+\.)?\w*(?:Exception|Error): API request failed with status [45]\d\d\b"
    r"|^(?:openai\.(?:error\.)?)?APIError: Invalid response object from API: '\{"
    r"|^(?:[\w.]+\.)?\w*Error: (?:[\w ]+: )?[45]\d\d (?:Server|Client) Error: .*? for url: \S+"
    r" Response: \{"
    r"|^(?:openai\.)?\w*Error: Error code: [45]\d\d$"
    # the same with the server's words as plain text (LiteLLM's mapping of vLLM's 400)
    r"|^(?:[\w.]+\.)?\w*Error: Error code: [45]\d\d - (?![{\s])"
    # Google's API client raising the status a service answered (``FailedPrecondition:
    # 400 Model server exited unexpectedly.``): the service's words, not the client's
    r"|^(?:google\.api_core\.exceptions\.)?(?:FailedPrecondition|InvalidArgument|NotFound"
    r"|PermissionDenied|ResourceExhausted|ServiceUnavailable|InternalServerError|BadRequest"
    r"|DeadlineExceeded|Aborted|Unknown): [45]\d\d "
    # an HTTP client's exception whose message ends with the server's error, as its repr
    # (``openai.InternalServerError: modal-http: .. status Failure: ValueError('..')``)
    r"|^openai\.\w*Error: .*\b[A-Z]\w*(?:Error|Exception)\((['\"]).*\1\)\s*$"
)
#: Exceptions that only report that an error printed above them happened (Triton's MLIR
#: pass manager under the compiler's own diagnostic; torch's autoload of a device
#: backend, under the loader's own error; a build command's exit status under the
#: compiler's): a root cause only where no error of their own
#: is in view.
_REPORTS_ABOVE = re.compile(
    r"(?:^|: )PassManager::run failed$|^Failed to load the backend extension: \w+\. "
    # a build tool's exit status, under the compiler's diagnostic
    r"|^Command '\[?'?(?:ninja|make|cmake|gmake|gcc|g\+\+|c\+\+|nvcc|hipcc)\b[^\n]*?"
    r" returned non-zero exit status"
)
#: vLLM's executor's report that a worker died: where its wrapper quotes the worker's
#: error (``fallback.WORKER_QUOTE``), the report only says the worker went down with it.
_WORKER_DIED = re.compile(r"^Worker proc [\w-]+ died unexpectedly")
#: Lines that are never an error's own words: wrappers, and reports of an error above.
_NOT_ALONE = re.compile(f"{WRAPPER.pattern}|{_REPORTS_ABOVE.pattern}")
#: Messages vLLM logs with a stack for errors it handles and goes on from (one plugin,
#: one request; a server's request that failed; exit handlers and a task nobody
#: awaited at shutdown): a root cause only when nothing else is.
HANDLED = re.compile(
    r"Failed to load plugin|Error in (?:chat completion|completion|preprocessing)"
    r"|Error in loading|Failed to (?:import|register)"
    r"|Exception in ASGI application|Error in atexit\._run_exitfuncs"
    r"|Task exception was never retrieved"
)
#: A user's own label above frames a paste put apart (``[关键堆栈跟踪]:``, "key stack
#: trace"; ``Stack:``): no record of an error of its own.
_LABEL_HEAD = re.compile(r"^\s*\[?[^\s:：\]]{1,24}\]?\s*[:：]\s*$")
_FAILED_PLUGIN = re.compile(r"Failed to load plugin (?P<name>[\w.-]+)")


def failed_plugin(tracebacks: Sequence[Traceback]) -> str | None:
    """The vLLM plugin a traceback's header says failed to load (vLLM logs it and goes
    on, and then cannot do what the plugin would have: infer an NPU, say), or None."""
    for tb in tracebacks:
        m = _FAILED_PLUGIN.search(tb.header)
        if m:
            return m["name"]
    return None


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
        "ResolutionImpossible",  # pip's closing line; the conflict it names is above
    }
)
_DEATH_TIER = {"strong": 0, "signal": 1, "native": 1, "follow-on": 3, "weak": 4}
#: The tier of follow-on errors and weak deaths: the error's own words outrank them.
_FOLLOW_TIER = 3


@dataclass(frozen=True)
class _Candidate:
    tier: int
    line: int
    build: Callable[[], RootCause]


def is_wrapper(link: Link) -> bool:
    return bool(WRAPPER.search(f"{link.type}: {link.message}"))


def ordered_links(tb: Traceback) -> list[Link]:
    """Links in root-first order: a Ray task's remote traceback first, then Python's
    chain in print order (the original exception is printed first)."""
    remote = [k for k in tb.links if k.relation == "remote"]
    return list(reversed(remote)) + [k for k in tb.links if k.relation != "remote"]


def _benign_reason(tb: Traceback, cat: Catalogue, version: str | None) -> str | None:
    for link in tb.links:
        hit = causes.hit(cat, link, version) if link.type else None
        if hit is not None and hit.entry.benign:
            return f"known harmless ({hit.name}): {hit.meaning}"
    if tb.level is not None and tb.level not in ("ERROR", "CRITICAL"):
        return f"logged at {tb.level} level: the process went on"
    if tb.header.startswith("Exception in thread"):
        return f"uncaught in a background thread ({tb.header.rstrip(':')}): the process went on"
    if tb.header.startswith("Exception ignored in"):
        return f"Python ignored it ({tb.header[:80]}): a finalizer's error, the process went on"
    return None


def _root_link(links: list[Link], cat: Catalogue, version: str | None) -> Link | None:
    """The first non-wrapper link; a later one of the same chain when only it is known by
    its words (transformers turns a ``KeyError`` into the ``ValueError`` that explains
    it)."""
    real = [k for k in links if not is_wrapper(k)]
    if not real:
        return None
    first = causes.hit(cat, real[0], version)
    if first is None or first.entry.raised_by is not None:
        # unknown, or known only by where it was raised: a later link whose own words
        # the catalogue knows explains it better
        for k in real[1:]:
            h = causes.hit(cat, k, version) if k.kind == "exception" else None
            if h is not None and h.entry.raised_by is None:
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
    tbs = _last_listed(_with_frames_first(sorted(distinct.values(), key=lambda t: t.first_line)))
    benign: list[Skipped] = []
    wrappers: list[Skipped] = []
    cands: list[_Candidate] = []
    truncated = ev.ends_mid_line
    absorbed: set[int] = set()
    worker_quoted = False  # a wrapper quotes the error a worker of vLLM's executor raised
    for tb in tbs:
        links = [k for k in ordered_links(tb) if k.kind != "cut"]
        truncated = truncated or not tb.complete
        if not links:
            if causes.header_states_error(tb) and not WRAPPER.search(tb.header):
                cands.append(_Candidate(1, tb.first_line, _header(tb, cat, ev)))
            continue
        why = _benign_reason(tb, cat, ev.vllm_version)
        if why is not None:
            benign.append(_skipped(tb, links[0], why))
            if why.startswith("uncaught in a background thread"):
                cands.append(_exception(5, tb, links[0], cat, ev, "thread"))
            continue
        for k in links:
            if is_wrapper(k):
                wrappers.append(_skipped(tb, k, "a wrapper the parent raises; the cause is above"))
                inner = quoted(k)
                if inner is not None:
                    cands.append(_Candidate(1, k.exc_line, _quote(tb, k, inner, cat, ev)))
                    worker_quoted = worker_quoted or WORKER_QUOTE.search(k.message) is not None
        root = _root_link(links, cat, ev.vllm_version)
        if root is None:
            continue
        died = actor_death(root.type, root.message)
        account = _account_above(died, ev.deaths, root.exc_line) if died is not None else None
        if died is not None and account is not None:
            # Ray's account pasted above, apart from the exception that names the actor
            died = dataclasses.replace(died, message=account.message)
            absorbed.add(account.line)
        if died is not None:  # Ray's report of an actor's death: that actor's death line
            cands.append(_Candidate(0, root.exc_line, _actor(tb, root, died, cat, ev)))
            continue
        handled = HANDLED.search(tb.header) is not None
        follow = (
            root.short_type in SECONDARY or handled or bool(_REPORTS_ABOVE.search(root.message))
        )
        if handled and ev.relay is not None and ev.relay.http and root.short_type not in SECONDARY:
            follow = False  # the server's own record of the error a client relays
        label = "follow-on" if follow else ""
        cut = _frames_below(tb, root, tbs) if tb.headless and not root.frames else None
        cands.append(_exception(3 if follow else 0, tb, root, cat, ev, label, cut))
    for d in ev.deaths:
        if d.line in absorbed:
            continue  # the account of a death an exception below names the actor of
        if d.strength == "weak" and _introduces(d, tbs):
            continue  # "EngineCore encountered a fatal error" above its own (cut) traceback
        if d.survived:
            continue  # a signal notice its process logged on after
        if worker_quoted and _WORKER_DIED.search(d.message):
            continue  # the executor's report of the worker's death, whose error is quoted
        glued = ev.relay is not None and ev.relay.own and ev.relay.line == d.line
        if d.strength == "signal" and glued:
            continue  # a signal notice glued after the error's own words by a lost break
        cands.append(_Candidate(_DEATH_TIER[d.strength], d.line, _death(d, cat, ev)))
    if (
        ev.relay is not None
        and not _went_on(ev.relay, tbs)
        and not WRAPPER.search(ev.relay.message)
    ):
        cut = next((t for t in tbs if t.links and all(k.kind == "cut" for k in t.links)), None)
        cands.append(_Candidate(1, ev.relay.line, _relayed(ev, cat, cut)))
    if ev.cli_error is not None:
        cands.append(_Candidate(2, ev.cli_error[0], lambda: causes.cli(ev.cli_error, cat, ev)))
    if all(c.tier >= _FOLLOW_TIER for c in cands):
        # nothing, or only follow-on errors: an error's own words the catalogue knows
        # (not a line a follow-on candidate already reads)
        read = {d.line for d in ev.deaths} | {c.line for c in cands}
        alone = known_alone(ev.ending, cat, ev.vllm_version, _NOT_ALONE, read)
        if alone is None and not cands and not tbs and not truncated:
            # no traceback and no error the catalogue knows: a line whose own marks say
            # it is one
            alone = marked_alone(ev.ending, cat, ev.vllm_version, _NOT_ALONE, read)
        if alone is not None:
            said = dataclasses.replace(ev, relay=alone)
            cands.append(_Candidate(1, alone.line, _relayed(said, cat, None)))
    note = None
    cause = None
    if cands:
        best = min(cands, key=lambda c: (c.tier, c.line))
        cause = best.build()
        if cause.evidence == "wrapper-message":
            note = "root cause read from a wrapper's message"
    else:
        note = unknown_note(ev, bool(wrappers), bool(tbs), truncated)
    extra = f"; {len(wrappers)} wrapper(s) skipped" if wrappers and cause else ""
    extra += f"; {len(benign)} harmless traceback(s) skipped" if benign and cause else ""
    if cause is not None and extra:
        cause = causes.with_reason(cause, cause.reason + extra)
    return LogTriage(
        path,
        cause,
        tuple(wrappers),
        len(tbs),
        note,
        tuple(benign),
        ev.vllm_version,
        truncated,
        ev.lines,
    )


def _exception(
    tier: int,
    tb: Traceback,
    link: Link,
    cat: Catalogue,
    ev: Evidence,
    label: str,
    cut: Traceback | None = None,
) -> _Candidate:
    return _Candidate(tier, link.exc_line, lambda: causes.from_link(tb, link, cat, ev, label, cut))


def _last_listed(tbs: list[Traceback]) -> list[Traceback]:
    """``tbs`` without the earlier tracebacks of a user's numbered list (``1.Traceback ..``,
    ``2.Traceback ..``): each is another run's error, and the last is the one to read (as
    a list of errors is read at its last)."""
    listed = [t for t in tbs if LISTED.match(t.header)]
    if len(listed) < 2:
        return tbs
    return [t for t in tbs if t not in listed[:-1]]


def _with_frames_first(tbs: list[Traceback]) -> list[Traceback]:
    """``tbs`` without an exception line quoted alone (a paste that put the error first)
    where the same exception follows with its frames: that one is the error, read whole.
    The same is also the same error recurring in the same process with other numbers in
    its message (a server handling one request's failure after another's: ``Unexpected
    token 13 ..``, then ``Unexpected token 200007 ..`` with its stack)."""
    framed = {
        (k.type, k.message) for t in tbs for k in t.links if k.kind == "exception" and k.frames
    }
    recurring = {
        (t.process, signature(k.type, k.message))
        for t in tbs
        for k in t.links
        if k.kind == "exception" and k.frames and k.type
    }
    return [
        t
        for t in tbs
        if not (
            t.headless
            and len(t.links) == 1
            and not t.links[0].frames
            and (
                (t.links[0].type, t.links[0].message) in framed
                or (
                    t.links[0].type != ""
                    and (t.process, signature(t.links[0].type, t.links[0].message)) in recurring
                )
            )
        )
    ]


def _went_on(relay: Relay, tbs: Sequence[Traceback]) -> bool:
    """The relayed line is read otherwise: it heads a traceback (the error logged above
    its own stack), or a warning relayed an error and the run went on (a traceback after
    it, cut before its exception line, is where the run ended, not in view)."""
    if any((t.header_line or t.first_line - 1) == relay.line and t.header for t in tbs):
        return True
    return relay.warning and any(
        t.first_line > relay.line and t.links and all(k.kind == "cut" for k in t.links) for t in tbs
    )


def _frames_below(tb: Traceback, link: Link, tbs: Sequence[Traceback]) -> Traceback | None:
    """A traceback of frames alone (cut before its exception line) that the same
    process printed below an exception line quoted without frames: the quoted error's
    own (a paste that put the error first, then its stack, with or without its
    ``Traceback`` header)."""
    for t in tbs:
        if (
            t.process == tb.process
            and t.first_line > link.exc_line
            and (not t.header or t.header.startswith("Traceback") or _LABEL_HEAD.match(t.header))
            and t.links
            and all(k.kind == "cut" for k in t.links)
        ):
            return t
    return None


def _quote(
    tb: Traceback, link: Link, inner: tuple[str, str], cat: Catalogue, ev: Evidence
) -> Callable[[], RootCause]:
    return lambda: causes.from_quote(tb, link, inner, cat, ev)


def _account_above(died: ActorDeath, deaths: Sequence[Death], line: int) -> Death | None:
    """Ray's account of an actor's death pasted alone above the exception that names the
    actor (whose own message stops before any account): that actor's account."""
    if died.process == MAIN or not died.message.startswith("The actor died unexpectedly"):
        return None
    return next(
        (
            d
            for d in deaths
            if d.line < line and d.process == MAIN and d.message.startswith("The actor is dead")
        ),
        None,
    )


def _introduces(d: Death, tbs: Sequence[Traceback]) -> bool:
    """A traceback of the same process starts right below the death line."""
    return any(t.process == d.process and d.line <= t.first_line <= d.line + 3 for t in tbs)


def _relayed(ev: Evidence, cat: Catalogue, cut: Traceback | None) -> Callable[[], RootCause]:
    return lambda: causes.from_relay(ev, cat, cut)


def _header(tb: Traceback, cat: Catalogue, ev: Evidence) -> Callable[[], RootCause]:
    return lambda: causes.from_header(tb, cat, ev)


def _actor(
    tb: Traceback, link: Link, died: ActorDeath, cat: Catalogue, ev: Evidence
) -> Callable[[], RootCause]:
    return lambda: causes.from_actor_death(tb, link, died, cat, ev)


def _death(d: Death, cat: Catalogue, ev: Evidence) -> Callable[[], RootCause]:
    return lambda: causes.from_death(d, cat, ev)
