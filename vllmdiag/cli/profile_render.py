"""Rich rendering of profile results. Text from traces (kernel, op and frame names,
capture logs) is data: it reaches Rich as :class:`~rich.text.Text`, never as markup."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from vllmdiag.profile.capture import CaptureResult
from vllmdiag.profile.diff import Diff
from vllmdiag.profile.job import DiffResult
from vllmdiag.profile.pyspy import FrameRow
from vllmdiag.profile.run import Observer


def _t(text: str, n: int = 70) -> Text:
    return Text(text if len(text) <= n else text[: n - 1] + "…")


def _share(x: float | None) -> str:
    return "" if x is None else f"{x * 100:.0f} %"


def observer(console: Console) -> Observer:
    def see(side: str, res: CaptureResult | None, backend: str) -> None:
        who = escape(side)
        if res is None:
            console.print(f"[bold]{who}[/]: capturing with {backend} …")
        elif res.ok:
            console.print(f"[green]{who}[/]: {backend} ok ({res.elapsed_s:.1f}s) → "
                          f"{escape(str(res.out))}")  # fmt: skip
        else:
            console.print(f"[red]{who}[/]: {backend} failed: {escape(res.reason or '')}")

    return see


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


def _legs(console: Console, d: Diff) -> None:
    a, b = d.a, d.b
    legs = Table(title="Sides")
    for col in ("", a.name, b.name, "delta"):
        legs.add_column(Text(col), justify="right" if col else "left")
    for label, x, y in (
        ("kernels", a.kernel_count, b.kernel_count),
        ("from CUDA graphs", a.graph_kernel_count, b.graph_kernel_count),
        ("steps", a.step_count, b.step_count),
        ("events refused", a.skipped_count, b.skipped_count),
    ):
        legs.add_row(label, str(x), str(y), f"{y - x:+d}")
    for label, fx, fy in (
        ("GPU time ms", a.gpu_time_us, b.gpu_time_us),
        ("GPU busy ms", a.gpu_busy_us, b.gpu_busy_us),
        ("GPU idle ms", a.gpu_idle_us, b.gpu_idle_us),
        (f"wall clock ms ({a.wall_source or 'none'})", a.wall_us, b.wall_us),
        ("launch calls ms (CPU)", a.launch_us, b.launch_us),
    ):
        if fx is None or fy is None:
            legs.add_row(label, "n/a", "n/a", "")
            continue
        legs.add_row(label, f"{fx / 1e3:.3f}", f"{fy / 1e3:.3f}", f"{(fy - fx) / 1e3:+.3f}")
    console.print(legs)


def show(console: Console, d: Diff, spy: tuple[FrameRow, ...] = ()) -> None:
    """The diff as tables, then its warnings and its paragraph."""
    _legs(console, d)
    fam = Table(title="Families")
    for col in ("family", f"{d.a.name} ms", f"{d.b.name} ms", "delta ms", "share"):
        fam.add_column(Text(col), justify="left" if col == "family" else "right")
    fam.add_column("mostly launched by (A / B)")
    for r in d.families:
        by = f"{(r.a_ops or ('–',))[0]} / {(r.b_ops or ('–',))[0]}"
        fam.add_row(r.family, f"{r.a_us / 1e3:.3f}", f"{r.b_us / 1e3:.3f}",
                    f"{r.delta_us / 1e3:+.3f}", _share(r.share), _t(by, 50))  # fmt: skip
    console.print(fam)
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
    frames(console, spy)
    for w in d.warnings:
        console.print(Text.assemble(("warning: ", "yellow"), w))
    console.print(Text(d.reconciliation))


def result(console: Console, res: DiffResult) -> None:
    if res.diff is not None:
        show(console, res.diff, res.frames)
    else:
        frames(console, res.frames)
    files = "  ".join(f"{k}: {v}" for k, v in res.files)
    console.print(Text(files))
