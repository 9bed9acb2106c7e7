"""The live view of a job that runs cells: env builds, cell i of n, the running cell's
elapsed time and last log line. One observer of the runner's events (the journal is
another); nothing in the runner knows about it."""

from __future__ import annotations

import time
from pathlib import Path
from types import TracebackType

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from vllmdiag.events import Note
from vllmdiag.printable import printable
from vllmdiag.services.envs.cache import EnvEvent, EnvState
from vllmdiag.spine.runner.events import (
    CellFinished,
    CellReused,
    CellsEvent,
    CellStarted,
    CellSwept,
    CellTick,
    RunStarted,
)

STYLE = {
    "pass": "green",
    "fail": "red",
    "timeout": "magenta",
    "error": "bold yellow",
    "skipped": "dim",
}


def last_line(log: Path, limit: int = 4096) -> str:
    try:
        with open(log, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            lines = [ln for ln in fh.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return printable(lines[-1][:160]) if lines else ""  # shown live, beside the render hook


class LiveView:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]cells"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        self.task = self.progress.add_task("cells", total=None)
        self.status = Text("")
        self.live = Live(
            Group(self.progress, self.status),
            console=console,
            refresh_per_second=4,
            transient=False,
        )
        self._last_read = 0.0
        self._started = False
        #: Cells settled so far: finished lines count these, so a resumed run's reused
        #: cells (settled first, whatever their place in the plan) read [1/8], [2/8], ...
        self._done = 0

    def __enter__(self) -> LiveView:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.status.plain = ""
        if self._started:
            self.live.stop()

    def _start(self) -> None:
        """The live display begins with the run, so an error before it prints alone."""
        if not self._started:
            self._started = True
            self.live.start()

    def __call__(self, event: CellsEvent) -> None:
        # Every name, path and log line is data: it goes in as Text, never as markup
        # (a log line holding "[/data/models/qwen]" must print, not crash the run).
        if isinstance(event, RunStarted):
            self._done = 0
            self._start()
            self.progress.update(self.task, total=event.cells)
            verb = "resuming" if event.resumed else "run"
            self._print(Text(f"{verb} directory: ").append(str(event.run_dir), style="bold"))
        elif isinstance(event, EnvEvent):
            colour = {
                EnvState.FAILED: "red",
                EnvState.READY: "green",
                EnvState.REUSED: "cyan",
                EnvState.DAMAGED: "yellow",
            }.get(event.kind, "")
            # A failure shows uv's whole account of it (its error lines); progress, one line.
            lines = event.detail.splitlines() if event.detail else [""]
            failed = event.kind is EnvState.FAILED
            shown = "\n  ".join(lines[:40]) if failed else lines[0]
            self._print(Text(f"leg {event.leg}: {event.kind.value} {shown}", style=colour))
        elif isinstance(event, CellStarted):
            self.progress.update(self.task, total=event.total)  # follow-up cells add to it
            self.status.plain = f"[{event.index}/{event.total}] {event.id}: starting"
        elif isinstance(event, CellTick):
            now = time.monotonic()
            if now - self._last_read > 0.5:
                self._last_read = now
                self.status.plain = f"{event.id} {event.elapsed_s:6.1f}s | {last_line(event.log)}"
        elif isinstance(event, (CellFinished, CellReused)):
            r = event.result
            self._done += 1
            line = Text(f"[{self._done}/{event.total}] {r.id}: ")
            line.append(r.outcome.value, style=STYLE.get(r.outcome.value, ""))
            line.append(f" rc={r.rc}" if r.rc is not None else "")
            reused = isinstance(event, CellReused)
            line.append(f" {r.elapsed_s:.1f}s" + (" (reused)" if reused else ""))
            cause = r.root_cause
            if cause is not None and (cause.type or cause.evidence == "death-line"):
                # where a hung cell stopped is worth its whole line
                room = 400 if r.hang is not None else 80
                line.append(f" — {cause.type or 'died'}: {(cause.message or '')[:room]}")
            self._print(line)
            self.progress.advance(self.task)
        elif isinstance(event, CellSwept):
            pids = ", ".join(map(str, event.pids))
            self._print(
                Text(
                    f"{event.id}: ended {len(event.pids)} process(es) it left running ", "dim"
                ).append(f"(pids {pids})", style="dim")
            )
        elif isinstance(event, Note):
            self._print(Text(f"{event.level}:", style="yellow").append(f" {event.text}"))

    def _print(self, text: Text) -> None:
        self.console.print(text, highlight=False, soft_wrap=True)
