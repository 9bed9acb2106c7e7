"""Where a timed-out cell hung: the stacks of its processes, dumped just before the kill,
and what its log said up to then (pure values; :mod:`vllmdiag.spine.runner.hangdump` takes the
dumps, the judge adds the start-up phase)."""

from __future__ import annotations

from dataclasses import dataclass

#: How many frames of the stuck thread a root cause names.
TOP_FRAMES = 3


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.function} ({self.file}:{self.line})"

    @property
    def package(self) -> str:
        """The installed package its file is in (``vllm``, ``torch``), else ``script``."""
        if "-packages/" not in self.file:
            return "script"
        return self.file.rsplit("-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")

    def short(self) -> str:
        """Its file from the package down (``vllm/model_executor/...``), else its name."""
        file = self.file.rsplit("-packages/", 1)[1] if "-packages/" in self.file else ""
        return f"{self.function} ({file or self.file.rsplit('/', 1)[-1]}:{self.line})"


@dataclass(frozen=True)
class ThreadStack:
    """One thread, innermost frame first. ``active``: running (not waiting) when
    sampled; ``gil``: it held the interpreter lock."""

    name: str
    thread_id: int
    active: bool
    gil: bool
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class ProcessDump:
    """One process of the cell's tree at the kill. ``title``: its command line (or the
    title it set, e.g. ``VLLM::EngineCore``); ``file``: its dump, relative to the cell's
    directory; ``note``: why there is no stack (not a Python process, py-spy missing or
    refused, the dump timed out), else None; ``nonblocking``: sampled without pausing it
    (its stacks may be torn)."""

    pid: int
    title: str
    depth: int
    file: str = ""
    threads: tuple[ThreadStack, ...] = ()
    note: str | None = None
    nonblocking: bool = False

    @property
    def dumped(self) -> bool:
        return self.note is None and bool(self.threads)


@dataclass(frozen=True)
class StuckAt:
    """The thread a hang is read from and its innermost frames outside the standard
    library (``frames``), with the innermost frame of all (``innermost``)."""

    pid: int
    title: str
    thread: str
    frames: tuple[Frame, ...]
    innermost: Frame | None


@dataclass(frozen=True)
class HangReport:
    """A cell killed at its timeout. ``silent_s``: seconds its log had not grown when
    it was killed; ``after_phase``/``after_s``: the last start-up phase its log
    completed, and how long that phase took (None: none seen); ``killed_at``: local
    time of the kill (ISO); ``py_spy``: the py-spy that dumped them ("" where none
    was found); ``notes``: what could not be done."""

    timeout_s: float
    killed_at: str
    silent_s: float | None
    processes: tuple[ProcessDump, ...]
    stuck: StuckAt | None = None
    py_spy: str = ""
    after_phase: str | None = None
    after_s: float | None = None
    notes: tuple[str, ...] = ()

    def describe(self) -> str:
        """One sentence a root cause can carry: timeout, phase, silence, frames."""
        parts = [f"killed at its {self.timeout_s:g} s timeout"]
        if self.after_phase is not None:
            took = f" ({self.after_s:.2f} s)" if self.after_s is not None else ""
            parts.append(f"after {self.after_phase}{took}")
        else:
            parts.append("before any start-up phase completed")
        if self.silent_s is not None:
            parts.append(f"its log silent for {self.silent_s:.0f} s before the kill")
        text = ", ".join(parts)
        if self.stuck is not None and (self.stuck.frames or self.stuck.innermost):
            shown = self.stuck.frames or ((self.stuck.innermost,) if self.stuck.innermost else ())
            text += (
                f"; stuck in {short_title(self.stuck.title)} (pid {self.stuck.pid}, thread "
                f"{self.stuck.thread}) at " + " <- ".join(f.short() for f in shown)
            )
        else:
            why = "; ".join(self.notes) or "no Python stack could be dumped"
            text += f"; no stack: {why}"
        return text


def short_title(title: str) -> str:
    """A process's command line as a person names it: ``VLLM::EngineCore``, or the
    script and its arguments without the interpreter and directories."""
    words = title.split()
    named = next((w for w in words if w.startswith("VLLM::")), None)
    if named is not None:
        return named
    if words and "python" in words[0].rsplit("/", 1)[-1]:
        words = words[1:]
    text = " ".join(w.rsplit("/", 1)[-1] if "/" in w and not w.endswith("/") else w for w in words)
    return (text[:77] + "...") if len(text) > 80 else text or title[:80]
