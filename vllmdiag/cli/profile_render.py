"""Rich rendering of profile runs and diffs. Text from traces, logs and recipes (kernel,
op and frame names, side names, capture failures) is data: it reaches Rich as
:class:`~rich.text.Text`, never as markup."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.table import Table
from rich.text import Text

from vllmdiag.cli.live import LiveView
from vllmdiag.jobs.profile import (
    CaptureFallback,
    CaptureFinished,
    CaptureStarted,
    CpuDiff,
    DiffReport,
    FrameRow,
    GpuDiff,
    ProfileEvent,
    ProfileStarted,
    Spread,
)
from vllmdiag.spine.runner.events import RunStarted


def _t(text: str, n: int = 70) -> Text:
    return Text(text if len(text) <= n else text[: n - 1] + "…")


def _share(x: float | None) -> str:
    return "" if x is None else f"{x * 100:.0f} %"


class ProfileView:
    """The live view of a profile run: the runner's progress (a recipe's cells) and a
    line per capture. One observer of the run's events; the journal is another."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.cells = LiveView(console)
        self.started = False

    def __enter__(self) -> ProfileView:
        self.cells.__enter__()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cells.__exit__(t, e, tb)

    def __call__(self, event: ProfileEvent) -> None:
        if isinstance(event, ProfileStarted):
            if not self.started:  # a recipe's run said where, as its cells began
                self._print(Text("run directory: ").append(str(event.run_dir), style="bold"))
            line = Text("profile: ", style="bold").append("; ".join(event.sides), style="")
            line.append(f" ({', '.join(b.value for b in event.backends)})", style="dim")
            self._print(line)
        elif isinstance(event, CaptureStarted):
            line = Text(event.side, style="bold").append(f": capturing with {event.backend.value}")
            self._print(line.append(" …"))
        elif isinstance(event, CaptureFinished):
            c = event.capture
            if c.ok:
                line = Text(c.leg, style="green").append(
                    f": {c.backend.value} ok ({c.elapsed_s:.1f}s) → {c.out}", style=""
                )
            else:
                line = Text(c.leg, style="red").append(
                    f": {c.backend.value} failed: {c.reason or ''}", style=""
                )
            self._print(line)
        elif isinstance(event, CaptureFallback):
            line = Text(event.side, style="yellow").append(
                f": {event.failed.value} could not capture it; {event.instead.value} next",
                style="",
            )
            self._print(line)
        else:
            self.started = self.started or isinstance(event, RunStarted)
            self.cells(event)

    def _print(self, text: Text) -> None:
        self.console.print(text, highlight=False, soft_wrap=True)


def frames(console: Console, rows: tuple[FrameRow, ...]) -> None:
    if not rows:
        return
    spy = Table(title="CPU frames whose share changed most (py-spy)")
    for col in ("frame", "A", "B", "change"):
        spy.add_column(col, justify="left" if col == "frame" else "right")
    for f in rows:
        spy.add_row(_t(f.frame, 80), f"{f.a_share * 100:.1f} %", f"{f.b_share * 100:.1f} %",
                    f"{f.delta * 100:+.1f} pt")  # fmt: skip
    console.print(spy)


def _sides(console: Console, d: GpuDiff) -> None:
    a, b = d.legs
    sides = Table(title="Sides")
    clock = a.wall_source.value if a.wall_source else "none"
    for col in ("", a.name, b.name, "delta"):
        sides.add_column(Text(col), justify="right" if col else "left")
    for label, x, y in (
        ("kernels", a.kernels, b.kernels),
        ("from CUDA graphs", a.graph_kernels, b.graph_kernels),
        ("steps", a.steps, b.steps),
        ("events refused", a.skipped_events, b.skipped_events),
    ):
        sides.add_row(label, str(x), str(y), f"{y - x:+d}")
    for label, fx, fy in (
        ("GPU time ms", a.gpu_time_us, b.gpu_time_us),
        ("GPU busy ms", a.gpu_busy_us, b.gpu_busy_us),
        ("GPU idle ms", a.gpu_idle_us, b.gpu_idle_us),
        (f"wall clock ms ({clock})", a.wall_us, b.wall_us),
        ("launch calls ms (CPU)", a.launch_us, b.launch_us),
    ):
        if fx is None or fy is None:
            sides.add_row(label, "n/a", "n/a", "")
            continue
        sides.add_row(label, f"{fx / 1e3:.3f}", f"{fy / 1e3:.3f}", f"{(fy - fx) / 1e3:+.3f}")
    console.print(sides)


def _steps(console: Console, d: GpuDiff) -> None:
    """Per-step times (median ± step-to-step spread) and the call on each change."""
    if not d.step_bands:
        return
    a, b = d.names
    t = Table(title="Step times (median ± 1.4826·MAD/median; called beyond the band)")
    for col in ("measure", "kind", f"{a} ms", f"{b} ms", "change", "band", "call"):
        t.add_column(Text(col), justify="right" if col in ("change", "band") else "left")
    for r in d.step_bands:
        t.add_row(r.measure, r.kind, _spread(r.a), _spread(r.b),
                  "n/a" if r.change is None else f"{r.change:+.1%}",
                  "n/a" if r.band is None else f"±{r.band:.1%}", r.call.value)  # fmt: skip
    console.print(t)


def _spread(s: Spread | None) -> str:
    return "n/a" if s is None else f"{s.median_us / 1e3:.3f} ±{s.relative:.1%} (n={s.n})"


def show(console: Console, d: GpuDiff) -> None:
    """The diff as tables, then its warnings and its paragraph."""
    _sides(console, d)
    a, b = d.names
    fam = Table(title="Families")
    for col in ("family", f"{a} ms", f"{b} ms", "delta ms", "share"):
        fam.add_column(Text(col), justify="left" if col == "family" else "right")
    fam.add_column("mostly launched by (A / B)")
    for r in d.families:
        by = f"{(r.a_ops or ('–',))[0]} / {(r.b_ops or ('–',))[0]}"
        fam.add_row(r.family, f"{r.a_us / 1e3:.3f}", f"{r.b_us / 1e3:.3f}",
                    f"{r.delta_us / 1e3:+.3f}", _share(r.share), _t(by, 50))  # fmt: skip
    console.print(fam)
    _steps(console, d)
    top = Table(title="Kernels that moved most (↔: paired by the op that launched them)")
    for col in ("kernel", "family", "launched by (A / B)", "A n", "B n", "delta ms", "share"):
        top.add_column(col, justify="right" if col in ("A n", "B n", "delta ms", "share")
                       else "left")  # fmt: skip
    for k in d.top:
        by = f"{k.a_op or '–'} / {k.b_op or '–'}"
        top.add_row(_t(k.name), Text(k.family), _t(by, 50), str(k.a_count), str(k.b_count),
                    f"{k.delta_us / 1e3:+.3f}", _share(k.share))  # fmt: skip
    console.print(top)
    if d.ops:
        opt = Table(title="GPU time by launching op")
        for col in ("op", "A ms", "B ms", "delta ms", "share"):
            opt.add_column(col, justify="left" if col == "op" else "right")
        for o in d.ops:
            opt.add_row(_t(o.op, 60), f"{o.a_us / 1e3:.3f}", f"{o.b_us / 1e3:.3f}",
                        f"{o.delta_us / 1e3:+.3f}", _share(o.share))  # fmt: skip
        console.print(opt)
    frames(console, d.pyspy)
    for w in d.warnings:
        console.print(Text.assemble(("warning: ", "yellow"), w))
    console.print(Text(d.reconciliation))


def result(console: Console, res: DiffReport) -> None:
    if isinstance(res, GpuDiff):
        show(console, res)
    elif isinstance(res, CpuDiff):
        frames(console, res.pyspy)
    files = "  ".join(f"{k}: {v}" for k, v in res.files.items())
    console.print(Text(files))
