"""``summary.md`` and a picture of a profile diff.

The picture is a PNG drawn with matplotlib when it is importable (the ``plot`` extra),
otherwise a self-contained HTML page with inline SVG (no scripts, no network): stacked
bars of family time per leg, and the kernels that moved most.
"""

from __future__ import annotations

import html
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.profile.diff import steptimes
from vllmdiag.jobs.profile.diff.time_diff import Diff, kernel_table
from vllmdiag.printable import printable
from vllmdiag.readers.traces import families
from vllmdiag.readers.traces.leg import WallClock
from vllmdiag.readers.traces.pyspy import FrameRow
from vllmdiag.services import atomic

COLOURS = {
    families.GEMM: "#4e79a7",
    families.ATTENTION: "#f28e2b",
    families.MOE: "#e15759",
    families.NORM_ACT: "#76b7b2",
    families.COMM: "#59a14f",
    families.MEMORY: "#edc948",
    families.OTHER: "#b07aa1",
}
IDLE = "#d3d3d3"


def _clock(source: WallClock | None) -> str:
    return source.value if source is not None else "none"


def _ms(us: float | None) -> str:
    return "n/a" if us is None else f"{us / 1000:.3f}"


def _dms(us: float) -> str:
    return f"{us / 1000:+.3f}"


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.0f} %"


def _short(name: str, n: int = 70) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def _cell(name: str, n: int = 70) -> str:
    """Text from a trace for a Markdown table cell: cut, pipes and backticks made
    harmless."""
    return _short(name, n).replace("|", "\\|").replace("`", "'")


def _step_lines(d: Diff) -> list[str]:
    """Per-step times on both sides (median, spread, n) and whether the change is beyond
    the step-to-step variation."""
    if not d.step_bands:
        return []
    lines = ["", "## Step times (median ± step-to-step spread)", "",
             f"The spread is 1.4826·MAD/median of a side's steps; a change is called only "
             f"beyond the wider spread and a {steptimes.FLOOR:.0%} floor, with at least "
             f"{steptimes.MIN_STEPS} steps a side.", "",
             f"| measure | kind | {_cell(d.a.name)} ms | {_cell(d.b.name)} ms | change | band "
             "| call |", "|---|---|---:|---:|---:|---:|---|"]  # fmt: skip
    for r in d.step_bands:
        lines.append(
            f"| {r.measure} | {r.kind} | {_spread(r.a)} | {_spread(r.b)} | "
            f"{'n/a' if r.change is None else f'{r.change:+.1%}'} | "
            f"{'n/a' if r.band is None else f'±{r.band:.1%}'} | {r.call.value} |"
        )
    return lines


def _spread(s: steptimes.Spread | None) -> str:
    if s is None:
        return "n/a"
    return f"{s.median_us / 1000:.3f} ±{s.relative:.1%} (n={s.n})"


def markdown(d: Diff, frames: tuple[FrameRow, ...] = (), picture: str | None = None) -> str:
    a, b = d.a, d.b
    lines = [f"# Profile diff: {a.name} → {b.name}", "", d.reconciliation, ""]
    if d.warnings:
        lines += [f"> warning: {w}" for w in d.warnings] + [""]
    if picture:
        lines += [f"![family time per leg]({picture})", ""]
    lines += [
        "## Legs",
        "",
        "| | " + a.name + " | " + b.name + " | delta |",
        "|---|---:|---:|---:|",
    ]
    rows: list[tuple[str, float | None, float | None, None]] = [
        ("kernels (graph-replayed incl.)", a.kernel_count, b.kernel_count, None),
        ("  of which from CUDA graphs", a.graph_kernel_count, b.graph_kernel_count, None),
        ("copies/sets", a.memop_count, b.memop_count, None),
        ("CPU operator events", a.cpu_op_count, b.cpu_op_count, None),
        ("steps", a.step_count, b.step_count, None),
        ("output tokens", a.output_tokens, b.output_tokens, None),
    ]
    for label, x, y, _ in rows:
        lines.append(f"| {label} | {x if x is not None else 'n/a'} | "
                     f"{y if y is not None else 'n/a'} | |")  # fmt: skip
    for label, x, y in (
        ("GPU time (ms)", a.gpu_time_us, b.gpu_time_us),
        ("GPU busy (ms)", a.gpu_busy_us, b.gpu_busy_us),
        ("GPU idle (ms)", a.gpu_idle_us, b.gpu_idle_us),
        ("capture window (ms)", a.window_us, b.window_us),
        (f"wall clock (ms; {_clock(a.wall_source)})", a.wall_us, b.wall_us),
        ("CPU in launch calls (ms)", a.launch_us, b.launch_us),
        ("GPU time per step (ms)", d.per_step[0], d.per_step[1]),
        ("GPU time per output token (ms)", d.per_token[0], d.per_token[1]),
    ):
        delta = _dms(y - x) if x is not None and y is not None else ""
        lines.append(f"| {label} | {_ms(x)} | {_ms(y)} | {delta} |")
    lines += _step_lines(d)
    lines += ["", "## Families", "", "| family | " + _cell(a.name) + " ms | " + _cell(b.name)
              + " ms | delta ms | share of delta | launched by (A / B) |",
              "|---|---:|---:|---:|---:|---|"]  # fmt: skip
    for r in d.families:
        by = f"{_cell(', '.join(r.a_ops) or '–', 60)} / {_cell(', '.join(r.b_ops) or '–', 60)}"
        lines.append(
            f"| {r.family} | {_ms(r.a_us)} | {_ms(r.b_us)} | {_dms(r.delta_us)} | "
            f"{_share(r.share)} | {by} |"
        )
    lines += ["", "## Kernels that moved most", "",
              "Kernels match by name; a row marked *paired* joins differently named kernels "
              "that the same op launched (eager kernel ↔ compiled Triton kernel).", "",
              "| kernel | family | launched by (A / B) | count A | count B | A ms | B ms "
              "| delta ms | share |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for k in d.top:
        by = f"{_cell(k.a_op or '–', 40)} / {_cell(k.b_op or '–', 40)}"
        mark = f" *paired: {_cell(k.paired_by, 40)}*" if k.paired_by else ""
        lines.append(
            f"| `{_cell(k.name, 90)}`{mark} | {k.family} | {by} | {k.a_count} | {k.b_count} "
            f"| {_ms(k.a_us)} | {_ms(k.b_us)} | {_dms(k.delta_us)} | {_share(k.share)} |"
        )
    if d.ops:
        lines += ["", "## GPU time by launching op", "",
                  "| op | A ms | B ms | delta ms | share | kernels |",
                  "|---|---:|---:|---:|---:|---|"]  # fmt: skip
        for o in d.ops:
            kern = ", ".join(f"`{_cell(n, 50)}`" for n in o.kernels[:3])
            lines.append(
                f"| {_cell(o.op, 60)} | {_ms(o.a_us)} | {_ms(o.b_us)} | {_dms(o.delta_us)} "
                f"| {_share(o.share)} | {kern} |"
            )
    for leg in (a, b):
        lines += ["", f"## Kernel table: {leg.name}", "",
                  "| kernel | family | launched by | count | of which graph | total ms "
                  "| mean µs |",
                  "|---|---|---|---:|---:|---:|---:|"]  # fmt: skip
        for ks in kernel_table(leg, 12):
            op = ks.ops[0][0] if ks.ops else "–"
            lines.append(
                f"| `{_cell(families.normalise(ks.name), 90)}` | {ks.family} | "
                f"{_cell(op, 50)} | {ks.count} | {ks.graph_count} | {_ms(ks.total_us)} | "
                f"{ks.total_us / max(1, ks.count):.1f} |"
            )
    for leg in (a, b):
        if leg.skipped:
            lines += ["", f"## Events refused in {leg.name}: {leg.skipped_count}", "",
                      "| reason | events |", "|---|---:|"]  # fmt: skip
            lines += [f"| {_cell(r, 90)} | {n} |" for r, n in sorted(leg.skipped.items())]
    if d.phases:
        lines += ["", "## Phases", "",
                  "| phase | steps A | steps B | A ms/step | B ms/step | change "
                  "| largest family change per step |",
                  "|---|---:|---:|---:|---:|---:|---|"]  # fmt: skip
        for p in d.phases:
            fam = ", ".join(f"{f} {_dms(v)} ms" for f, v in p.families[:2])
            lines.append(
                f"| {p.kind} | {p.a_steps} | {p.b_steps} | {_ms(p.a_us_per_step)} | "
                f"{_ms(p.b_us_per_step)} | {_share(p.change)} | {fam} |"
            )
    if frames:
        lines += ["", "## CPU (py-spy): frames whose sample share changed most", "",
                  "| frame | A share | B share | change |", "|---|---:|---:|---:|"]  # fmt: skip
        for fr in frames:
            lines.append(
                f"| `{_cell(fr.frame, 90)}` | {fr.a_share * 100:.1f} % | "
                f"{fr.b_share * 100:.1f} % | {fr.delta * 100:+.1f} pt |"
            )
    lines += ["", "Sources: " + ", ".join(f"`{s}`" for s in (*a.sources, *b.sources)), ""]
    return "\n".join(lines)


def pyspy_markdown(a: str, b: str, frames: tuple[FrameRow, ...]) -> str:
    """``summary.md`` of a CPU-only (py-spy) comparison."""
    lines = [f"# CPU profile diff (py-spy): {a} → {b}", "",
             "| frame | A share | B share | change |", "|---|---:|---:|---:|"]  # fmt: skip
    for fr in frames:
        lines.append(
            f"| `{_cell(fr.frame, 90)}` | {fr.a_share * 100:.1f} % | "
            f"{fr.b_share * 100:.1f} % | {fr.delta * 100:+.1f} pt |"
        )
    return "\n".join([*lines, ""])


def _family_us(d: Diff) -> list[tuple[str, dict[str, float]]]:
    out = []
    for leg, pick in ((d.a, "a_us"), (d.b, "b_us")):
        vals = {r.family: float(getattr(r, pick)) for r in d.families}
        vals["GPU idle"] = leg.gpu_idle_us
        out.append((leg.name, vals))
    return out


def png(d: Diff, path: Path) -> Path | None:
    """Stacked family bars and top-delta kernels as a PNG, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), width_ratios=(1, 1.6))
    legs = _family_us(d)
    labelled: set[str] = set()
    for i, (_, vals) in enumerate(legs):
        bottom = 0.0
        for fam in (*families.FAMILIES, "GPU idle"):
            v = vals.get(fam, 0.0) / 1000
            if v <= 0:
                continue
            label = None if fam in labelled else fam
            labelled.add(fam)
            left.bar(i, v, bottom=bottom, color=COLOURS.get(fam, IDLE), label=label)
            bottom += v
    left.legend(fontsize=8)
    left.set_xticks(range(len(legs)), [n for n, _ in legs])
    left.set_ylabel("ms (GPU time by family, then idle)")
    left.set_title("Where each leg's time goes")
    top = list(d.top[:12])[::-1]
    right.barh(
        range(len(top)),
        [k.delta_us / 1000 for k in top],
        color=[COLOURS.get(k.family, IDLE) for k in top],
    )
    right.set_yticks(range(len(top)), [_short(k.name, 48) for k in top], fontsize=7)
    right.axvline(0, color="black", linewidth=0.8)
    right.set_xlabel(f"ms added in {d.b.name} vs {d.a.name}")
    right.set_title("Kernels that moved most")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def html_page(d: Diff, path: Path) -> Path:
    """The same picture as inline SVG in one HTML file."""
    legs = _family_us(d)
    peak = float(max(sum(v.values()) for _, v in legs)) or 1.0
    bars = []
    for i, (name, vals) in enumerate(legs):
        y = 300.0
        x = 60 + i * 120
        for fam in (*families.FAMILIES, "GPU idle"):
            h = vals.get(fam, 0.0) / peak * 260
            if h <= 0:
                continue
            y -= h
            bars.append(
                f'<rect x="{x}" y="{y:.1f}" width="80" height="{h:.1f}" '
                f'fill="{COLOURS.get(fam, IDLE)}"><title>{html.escape(fam)}: '
                f"{vals[fam] / 1000:.3f} ms</title></rect>"
            )
        bars.append(f'<text x="{x + 40}" y="318" text-anchor="middle">{html.escape(name)}</text>')
    legend = "".join(
        f'<span style="background:{COLOURS.get(f, IDLE)};padding:0 8px;margin:0 4px"></span>'
        f"{html.escape(f)}"
        for f in (*families.FAMILIES, "GPU idle")
    )
    span: float = max((abs(k.delta_us) for k in d.top), default=1.0) or 1.0
    rows = []
    for j, k in enumerate(d.top[:12]):
        w: float = abs(k.delta_us) / span * 300
        bx = 560.0 if k.delta_us >= 0 else 560.0 - w
        yy = 20 + j * 24
        rows.append(
            f'<rect x="{bx:.1f}" y="{yy}" width="{w:.1f}" height="18" '
            f'fill="{COLOURS.get(k.family, IDLE)}"><title>{html.escape(k.name)}</title></rect>'
            f'<text x="870" y="{yy + 13}" font-size="11">{html.escape(_short(k.name, 60))} '
            f"{k.delta_us / 1000:+.3f} ms</text>"
        )
    page = f"""<!doctype html><meta charset="utf-8"><title>Profile diff</title>
<body style="font-family:sans-serif">
<h1>{html.escape(d.a.name)} → {html.escape(d.b.name)}</h1>
<p>{html.escape(d.reconciliation)}</p><p>{legend}</p>
<svg width="1400" height="340" xmlns="http://www.w3.org/2000/svg">{"".join(bars)}
<line x1="560" y1="10" x2="560" y2="310" stroke="black"/>{"".join(rows)}</svg></body>"""
    atomic.write_text(path, page)
    return path


def write(d: Diff, out: Path, frames: tuple[FrameRow, ...] = ()) -> dict[str, Path]:
    """``summary.md`` plus ``diff.png`` (or ``diff.html``) under ``out``."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".vllmdiag-write-check"
        probe.touch()  # a directory that cannot take files (/proc, read-only) is said here
        probe.unlink()
    except OSError as exc:
        what = "is not a directory" if out.exists() and not out.is_dir() else "cannot be written"
        raise VllmdiagError(
            f"the output directory {what}: {exc.strerror or exc}",
            where=str(out),
            hint="give --out a new or writable directory (or --runs-root a writable place)",
        ) from None
    pic = png(d, out / "diff.png") or html_page(d, out / "diff.html")
    md = out / "summary.md"
    atomic.write_text(md, printable(markdown(d, frames, pic.name)))
    return {"summary": md, "picture": pic}
