"""What the reader hands each line to: the traceback parser, the death-line watch, and
the few facts besides (vLLM's version, a refused command line, a result line)."""

from __future__ import annotations

import dataclasses
import re

from vllmdiag.readers.triage import httperrors, relays
from vllmdiag.readers.triage.callers import (
    FRAMEWORK_HINTS,
    WRAPPER_HINTS,
    framework_line,
    wrapper_in,
)
from vllmdiag.readers.triage.deaths import DeathWatch
from vllmdiag.readers.triage.lines import Line, is_error_record, normalise, unglue
from vllmdiag.readers.triage.pipconflict import PipConflict
from vllmdiag.readers.triage.tracebacks import TracebackParser

#: The vLLM version a log states: its engine's and server's start lines, and where a user
#: wrote it down (``pip3 show vllm    version is 0.14.1``, ``the vllm version installed
#: was 0.10.1.1``, ``vllm==0.4.2``).
_VERSION = re.compile(
    r"LLM engine \(v(?P<a>[^)\s]+)\)|API server version (?P<b>[\w.+-]+)"
    r"|vLLM version (?P<c>[\w.+-]+)"
    r"|\b[Vv][Ll][Ll][Mm](?:==| {1,8}(?:version )?(?:installed )?(?:is|was) +v?)"
    r"(?P<d>\d+\.\d+[\w.+-]*)"
)
_VLLM_CHANGE = "vllm-project/vllm/"
_VLLM_LINK = re.compile(r"github\.com/vllm-project/vllm/(?:pull|commit)/\w+")
_FINISHED = re.compile(r"^Throughput: [\d.]+ requests/s|^Avg latency: [\d.]+ seconds")
#: LLM.generate's progress bar; tqdm redraws it in place, so the last draw on a line counts.
_PROGRESS = "Processed prompts:"
_ALL_DONE = re.compile(r"^\s*100%\|")
_CLI_ERROR = re.compile(r"^(?P<prog>[\w][\w .\-/<>\[\]]*): error: (?P<msg>.+)$")
#: argparse's refusal quoted in a user's sentence, in backticks or quotes, its spaces
#: kept or lost in the retyping (`` `vllm: error: unrecognized arguments: --x` ``,
#: ``“vllm:error:unrecognized arguments:--x”``).
_QUOTED_CLI_ERROR = re.compile(
    r"[`\"“](?P<prog>[\w][\w.\-/]*): ?error: ?(?P<msg>(?:unrecognized arguments|argument "
    r"|the following arguments are required|invalid choice)[^`\"”]*)[`\"”]"
)
#: A command line refused without the program's name: clap's (uv, ruff, rust programs:
#: ``error: unexpected argument '--x' found``), and argparse's own messages where the
#: paste lost the ``prog:`` in front of them (and the usage line above).
_CLAP_ERROR = re.compile(
    r"^error: (?P<msg>(?:unexpected argument|unrecognized subcommand|invalid value"
    r"|the argument|unexpected value) .+"
    r"|(?:unrecognized arguments|the following arguments are required|ambiguous option"
    r"|argument [\w/-]+(?:/[\w-]+)*: (?:invalid|expected|ambiguous|not allowed|conflicting))"
    r"\b.+)$"
)


#: click's report of a command that failed on its arguments, as BentoML's CLI prints it
#: (``Error: [bentoml-cli] `serve` failed: Invalid Tag _service:svc``).
_CLICK_ERROR = re.compile(r"^Error: \[(?P<prog>[\w.-]+)\] `(?P<cmd>[\w-]+)` failed: (?P<msg>.+)$")
#: click's own refusal of a command line, which names no program (``Error: Missing
#: option '--target'``, ``Error: No such option: --x``): the process that printed it.
_CLICK_REFUSED = re.compile(rf"^Error: (?P<msg>{relays.CLICK_REFUSAL}.*)$")
#: rich-click's and Typer's panel around click's refusal (``╭─ Error ───╮`` above
#: ``│ Got unexpected extra argument (x) │``, its borders peeled by the normaliser): the
#: panel's first line is the refusal.
_PANEL_HEAD = re.compile(r"^╭─+ Error ─")
_PANEL_LINE = re.compile(rf"^(?:│\s*)?(?P<msg>{relays.CLICK_REFUSAL}.*?)\s*│?$")
#: How many lines below its head a panel's refusal may stand.
_PANEL_LINES = 2
#: A shell refusing an option in a script (a container's entrypoint):
#: ``/usr/bin/entrypoint.sh: line 6: exec: --: invalid option``.
_SHELL_ERROR = re.compile(
    r"^(?P<prog>\S+): line \d+: (?P<msg>[\w.-]+: \S+: (?:invalid option|invalid argument"
    r"|unrecognized option)\b.*)$"
)
#: Programs whose ``prog: error: ..`` lines are their own reports, not a refused command
#: line: Slurm's, the kernel's, daemons'.
_NOT_A_CLI = frozenset(
    {
        "slurmstepd",
        "srun",
        "sbatch",
        "salloc",
        "slurmd",
        "kernel",
        "systemd",
        "dockerd",
        "containerd",
        "kubelet",
        "raylet",
        "sshd",
        "mpirun",
        "prterun",
        "ninja",
        "make",
        "cmake",
    }
)


#: A Python warning whose message ends with a colon: the failed import it quotes follows
#: on the next line (``connections.py:8: RuntimeWarning: Failed to read commit hash:``).
_WARNING_HEAD = re.compile(r"\b[A-Z]\w*Warning: .*:\s*$")
#: How many lines a relayed message may go on over (Docker's daemon answer).
_CONTINUATION = 4
#: How far below a pretty-printed body's ``"message"`` line its ``"type"`` line may be.
_TYPE_BELOW = 3
#: The C++ runtime's label of an uncaught exception's message, under its type.
_WHAT = re.compile(r"^what\(\):\s+")


class Watch:
    """Feed raw lines in order; read the parser, the deaths and the facts after."""

    def __init__(self) -> None:
        self.parser = TracebackParser()
        self.deaths = DeathWatch()
        self.version: str | None = None
        self.finished: str | None = None
        self.cli_error: tuple[int, str, str] | None = None
        self.relay: relays.Relay | None = None
        self.wrapper: str | None = None  # a program that built vLLM's command line
        #: a framework driving vLLM that a line of its own names
        self.framework: str | None = None
        #: the line where LLM.generate's progress bar last read 100 % (None: not, or it
        #: started over after)
        self.completed: int | None = None
        #: a line links a vLLM pull request or commit
        self.vllm_change = False
        #: pip's list of what conflicts, after its refusal
        self.pip = PipConflict()
        #: the previous line (process, text): a warning's header above a quoted error
        self._previous: tuple[str, str] = ("", "")
        #: lines the relayed message may still go on over
        self._continuing = 0
        #: lines below an error panel's head where its refusal may still stand
        self._panel = 0
        #: the last pretty-printed body's ``"type"`` line (number, type): it may stand above
        #: the ``"message"`` line it types
        self._body_type: tuple[int, str] | None = None

    def _refused(self, number: int, text: str, process: str) -> None:
        """A command line a CLI or a shell script refused, in their own formats."""
        k = _CLICK_ERROR.match(text)
        if k:
            self.cli_error = (number, k["msg"], f"{k['prog']} {k['cmd']}")
            return
        r = _CLICK_REFUSED.match(text)
        if r:
            self.cli_error = (number, r["msg"], process)
            return
        sh = _SHELL_ERROR.match(text)
        if sh:
            self.cli_error = (number, sh["msg"], sh["prog"])

    def _in_panel(self, number: int, text: str, process: str) -> None:
        """A line of rich-click's error panel: its head opens it, its first line that is
        click's refusal is the refused command line (the process that printed it)."""
        if _PANEL_HEAD.match(text):
            self._panel = _PANEL_LINES
            return
        self._panel -= 1
        refused = _PANEL_LINE.match(text)
        if refused and self.cli_error is None:
            self.cli_error = (number, refused["msg"], process)
            self._panel = 0

    def busy(self) -> bool:
        """Whether the next lines matter even without a marker."""
        return (
            self.parser.has_open
            or self.deaths.collecting
            or self.pip.collecting
            or self._continuing > 0
            or self._panel > 0
        )

    def feed(self, number: int, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace")
        for part in unglue(text):
            self._line(number, part)

    def _line(self, number: int, raw: str) -> None:
        line = normalise(raw, number)
        in_traceback = self.parser.feed(line)
        text = line.text
        if not in_traceback:
            self.deaths.feed(line)
            if self._panel or _PANEL_HEAD.match(text.strip()):
                self._in_panel(number, text.strip(), line.process)
            if self.cli_error is None and ("rror: " in text or ": line " in text):
                self._refused(number, text.strip(), line.process)
            if self.cli_error is None and "error:" in text:
                m = _CLI_ERROR.match(text.strip())
                if m and m["prog"].strip().lower() in _NOT_A_CLI:
                    m = None  # a cluster manager's or daemon's own error line
                c = None if m else _CLAP_ERROR.match(text.strip())
                q = None if m or c else _QUOTED_CLI_ERROR.search(text)
                if m:
                    self.cli_error = (number, m["msg"], m["prog"])
                elif c:  # clap does not name the program: the process that printed it
                    self.cli_error = (number, c["msg"], line.process)
                elif q:  # a user's quote of the refusal
                    self.cli_error = (number, q["msg"].strip(), q["prog"])
            if self.relay is not None and self.relay.pip and "dependenc" in text:
                self._pip_again(line)
            if self.relay is None:
                self._relayed(line)
            elif self._continuing:
                self._goes_on(text)
            elif self.relay.typed_below and number <= self.relay.line + _TYPE_BELOW:
                self._typed_below(text)
            if '"type"' in text:
                t = httperrors.BODY_TYPE_LINE.match(text.strip())
                self._body_type = (number, t["type"]) if t else self._body_type
        self._previous = (line.process, text)
        if self.pip.collecting:
            self.pip.feed(number, text)
        if self.wrapper is None and any(h in text.lower() for h in WRAPPER_HINTS):
            self.wrapper = wrapper_in(text)
        if self.framework is None and any(h in text for h in FRAMEWORK_HINTS):
            self.framework = framework_line(text)
        if not self.vllm_change and _VLLM_CHANGE in text:
            self.vllm_change = _VLLM_LINK.search(text) is not None
        if _PROGRESS in text:
            last = text.rsplit(_PROGRESS, 1)[1]
            self.completed = number if _ALL_DONE.match(last) else None
        if self.finished is None and ("Throughput: " in text or "Avg latency: " in text):
            m = _FINISHED.search(text)
            self.finished = text.strip() if m else None
        if self.version is None and (
            "version" in text or "engine (v" in text or "vllm==" in text.lower()
        ):
            v = _VERSION.search(text)
            if v:
                self.version = v["a"] or v["b"] or v["c"] or v["d"]

    def _relayed(self, line: Line) -> None:
        relay = relays.classify(line, is_error_record(line))
        if relay is None:
            return
        typed_above = self._body_type
        if relay.typed_below and typed_above and line.number - typed_above[0] <= _TYPE_BELOW:
            # the body put its ``"type"`` line above its ``"message"`` line
            relay = dataclasses.replace(relay, type=typed_above[1], typed_below=False)
        if relay.pip:
            self.pip.start = line.number
        process, previous = self._previous
        if relay.own and process == line.process and _WARNING_HEAD.search(previous):
            # the error a warning quotes (the run went on after it), not its own line
            relay = dataclasses.replace(relay, own=False, warning=True)
        self._continuing = _CONTINUATION if relay.continues else 0
        self.relay = relay

    def _pip_again(self, line: Line) -> None:
        """pip refusing again (the user ran it again): the later refusal, the one the log
        ends with, is the one read."""
        again = relays.classify(line, is_error_record(line))
        if again is not None and again.pip:
            self.relay, self.pip = None, PipConflict()

    def _typed_below(self, text: str) -> None:
        """The ``"type"`` line of the pretty-printed body whose ``"message"`` line the
        relay read: the exception it names types the error."""
        assert self.relay is not None
        t = httperrors.BODY_TYPE_LINE.match(text.strip())
        if t is not None:
            self.relay = dataclasses.replace(self.relay, type=t["type"], typed_below=False)

    def _goes_on(self, text: str) -> None:
        """A line of the relayed message that goes on (Docker's daemon answer), until a
        blank line; a pydantic message until its ``[type=..]`` part, blank lines and all;
        a relay that said only that a step failed takes the next line as its message; an
        HTTP body a paste broke over lines is read once it closes."""
        assert self.relay is not None
        pydantic = self.relay.type == relays.PYDANTIC_ERROR
        if not text.strip():
            if not pydantic:
                self._continuing = 0
            return
        self._continuing -= 1
        if not self.relay.message:  # the relay's record said only that: the next line is it
            self._continuing = 0
            message = _WHAT.sub("", text.strip())  # C++'s ``what():  <message>``
            self.relay = dataclasses.replace(self.relay, message=message)
            return
        if pydantic and "[type=" in text:
            self._continuing = 0
            text = text.split(" [type=", 1)[0]
        message = f"{self.relay.message} {text.strip()}"
        self.relay = dataclasses.replace(self.relay, message=message)
        if self.relay.body and "}'" in text:  # the body the relay quotes has closed
            said = httperrors.quoted_body(message)
            self._continuing = 0
            if said is not None:
                self.relay = dataclasses.replace(
                    self.relay, type=said[0], message=said[1], body=False
                )
