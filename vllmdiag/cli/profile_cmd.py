"""CLI: ``vllmdiag profile`` — capture one workload on two legs, and diff the captures.

vllmdiag profile RECIPE --legs A B [--workload W] [--capture torch|nsys|py-spy ...]
vllmdiag profile capture --leg A=/venv/a --leg B=/venv/b --script work.py [-- ARGS]
vllmdiag profile diff A B        (run directories, capture directories or trace files)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors
from vllmdiag.errors import VllmdiagError
from vllmdiag.profile import diff as diffmod
from vllmdiag.profile import leg as legmod
from vllmdiag.profile import pyspy, render
from vllmdiag.profile.capture import CaptureResult, Workload
from vllmdiag.profile.run import Journal, LegTarget, ProfileRun, load_run, profile_legs


class _ProfileGroup(TyperGroup):
    """``profile RECIPE ...`` runs the hidden ``run`` command; named commands as usual."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        args = _expand_multi(args)
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


_MULTI = ("--legs", "--capture", "-c")


def _expand_multi(args: list[str]) -> list[str]:
    """``--legs A B`` and ``--capture torch py-spy`` (as the issue spells them) →
    one option per value; nothing after ``--`` (a script's own arguments) is touched."""
    out: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            return [*out, *args[i:]]
        if tok in _MULTI:
            i += 1
            while i < len(args) and not args[i].startswith("-"):
                out += [tok, args[i]]
                i += 1
            continue
        out.append(tok)
        i += 1
    return out


profile_app = typer.Typer(
    cls=_ProfileGroup,
    help="Profile one workload on two legs and diff where the GPU time went.\n\n"
    "vllmdiag profile RECIPE --legs A B [--workload W] [--capture torch|nsys|py-spy ...]"
    " captures a recipe's workload on two of its legs, serially, into one run directory "
    "and diffs them; 'capture' does the same for existing environments; 'diff' compares "
    "two captures (run directories, Kineto .json/.json.gz, nsys .sqlite, py-spy raw).",
    no_args_is_help=True,
)

CaptureOpt = typer.Option(
    ["torch"], "--capture", "-c", help="torch, nsys or py-spy; repeat for several."
)


def _leg_path(value: str) -> LegTarget:
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise VllmdiagError(
            f"--leg takes NAME=PATH, not {value!r}",
            hint="e.g. --leg old=/opt/venvs/vllm-0.18 (a venv or its python)",
        )
    from vllmdiag.envs import EnvCache, LegSpec

    env = EnvCache().ensure(LegSpec(name, existing=Path(path).expanduser()))
    return LegTarget(name, env.python)


def _observer(console: Console) -> Any:
    def see(leg: str, res: CaptureResult | None, backend: str) -> None:
        if res is None:
            console.print(f"[bold]{leg}[/]: capturing with {backend} …")
        elif res.ok:
            console.print(f"[green]{leg}[/]: {backend} ok ({res.elapsed_s:.1f}s) → {res.out}")
        else:
            console.print(f"[red]{leg}[/]: {backend} failed: {res.reason}")

    return see


def _diff_run(run: ProfileRun, top: int, console: Console) -> dict[str, Any]:
    """Diff the first two legs of a run with a GPU capture; py-spy frames if both have it."""
    legs = list(dict.fromkeys(c.leg for c in run.captures))
    out: dict[str, Any] = {"run": run.to_json()}
    gpu = []
    for leg in legs:
        d = run.leg_dir(leg, "torch") or run.leg_dir(leg, "nsys")
        if d is not None:
            gpu.append((leg, d))
    spy = [(leg, d) for leg in legs if (d := run.leg_dir(leg, "py-spy")) is not None]
    if len(gpu) >= 2:
        result = _diff_paths(gpu[0][1], gpu[1][1], gpu[0][0], gpu[1][0], top, run.out, console)
        out["diff"] = result
    elif len(spy) >= 2:
        out["pyspy"] = _spy_only(spy[0][1], spy[1][1], spy[0][0], spy[1][0], top, run.out,
                                 console)  # fmt: skip
    else:
        console.print("[yellow]fewer than two legs have a capture to compare: no diff[/]")
    return out


def _spy_only(
    a: Path, b: Path, name_a: str, name_b: str, top: int, out: Path, console: Console
) -> list[dict[str, Any]]:
    fa, fb = pyspy.find(a), pyspy.find(b)
    if not fa or not fb:
        raise VllmdiagError(
            f"no py-spy output in {a if not fa else b}",
            hint="record with: py-spy record --format raw -o NAME.pyspy.txt",
        )
    frames = pyspy.diff(_merge_spy(fa), _merge_spy(fb), top=top)
    _show_frames(console, frames)
    from vllmdiag import atomic

    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out / "summary.md", render.pyspy_markdown(name_a, name_b, frames))
    console.print(f"summary: {out / 'summary.md'}")
    return [f.__dict__ for f in frames]


def _diff_paths(
    a: Path, b: Path, name_a: str | None, name_b: str | None, top: int, out: Path,
    console: Console,
) -> dict[str, Any]:  # fmt: skip
    la = legmod.load(a, name_a or _label(a))
    lb = legmod.load(b, name_b or _label(b))
    if la.name == lb.name:  # e.g. two files both called trace.json.gz
        la, lb = replace(la, name=f"A:{la.name}"), replace(lb, name=f"B:{lb.name}")
    d = diffmod.diff(la, lb, top=top)
    frames: tuple[pyspy.FrameRow, ...] = ()
    sa, sb = _pyspy_near(a), _pyspy_near(b)
    if sa and sb:
        frames = pyspy.diff(_merge_spy(sa), _merge_spy(sb), top=top)
    files = render.write(d, out, frames)
    _show(console, d, frames)
    console.print(f"summary: {files['summary']}  picture: {files['picture']}")
    data = d.to_json()
    data["pyspy"] = [f.__dict__ for f in frames]
    data["files"] = {k: str(v) for k, v in files.items()}
    return data


def _is_pyspy(path: Path) -> bool:
    """A py-spy output file, or a directory with py-spy output and no GPU trace."""
    if path.is_file():
        return not path.name.endswith(legmod.TRACE_SUFFIXES)
    return path.is_dir() and bool(pyspy.find(path)) and not legmod.trace_files(path)


def _label(path: Path) -> str:
    """A leg's name from its path: the file's stem, or a capture dir's leg dir."""
    if path.is_file():
        name = path.name
        for suffix in (".gz", ".json", ".sqlite", ".txt", ".pyspy", ".folded", ".raw"):
            name = name.removesuffix(suffix)
        return name
    if path.name in ("torch", "nsys", "pyspy") and path.parent.name:
        return path.parent.name
    return path.name


def _pyspy_near(path: Path) -> list[Path]:
    base = path if path.is_dir() else path.parent
    found = pyspy.find(base) or pyspy.find(base.parent / "pyspy")
    return found


def _merge_spy(files: list[Path]) -> pyspy.PySpyProfile:
    parts = [pyspy.read(f) for f in files]
    if len(parts) == 1:
        return parts[0]
    inc: dict[str, int] = {}
    own: dict[str, int] = {}
    for p in parts:
        for k, v in p.inclusive.items():
            inc[k] = inc.get(k, 0) + v
        for k, v in p.own.items():
            own[k] = own.get(k, 0) + v
    return pyspy.PySpyProfile(
        ",".join(p.source for p in parts), sum(p.samples for p in parts), inc, own,
        sum(p.processes for p in parts),
    )  # fmt: skip


def _show_frames(console: Console, frames: tuple[pyspy.FrameRow, ...]) -> None:
    if not frames:
        return
    spy = Table(title="CPU frames whose share changed most (py-spy)")
    for col in ("frame", "A", "B", "change"):
        spy.add_column(col, justify="left" if col == "frame" else "right")
    for f in frames:
        spy.add_row(f.frame[:80], f"{f.a_share * 100:.1f} %", f"{f.b_share * 100:.1f} %",
                    f"{f.delta * 100:+.1f} pt")  # fmt: skip
    console.print(spy)


def _show(console: Console, d: diffmod.Diff, frames: tuple[pyspy.FrameRow, ...]) -> None:
    a, b = d.a, d.b
    legs = Table(title="Legs")
    for col in ("", a.name, b.name, "delta"):
        legs.add_column(col, justify="right" if col else "left")
    for label, x, y in (
        ("kernels", a.kernel_count, b.kernel_count),
        ("from CUDA graphs", a.graph_kernel_count, b.graph_kernel_count),
        ("steps", a.step_count, b.step_count),
    ):
        legs.add_row(label, str(x), str(y), f"{y - x:+d}")
    for label, fx, fy in (
        ("GPU time ms", a.gpu_time_us, b.gpu_time_us),
        ("GPU busy ms", a.gpu_busy_us, b.gpu_busy_us),
        ("GPU idle ms", a.gpu_idle_us, b.gpu_idle_us),
        ("launch calls ms (CPU)", a.launch_us, b.launch_us),
    ):
        legs.add_row(label, f"{fx / 1e3:.3f}", f"{fy / 1e3:.3f}", f"{(fy - fx) / 1e3:+.3f}")
    console.print(legs)
    fam = Table(title="Families")
    for col in ("family", f"{a.name} ms", f"{b.name} ms", "delta ms", "share"):
        fam.add_column(col, justify="left" if col == "family" else "right")
    for r in d.families:
        share = "" if r.share is None else f"{r.share * 100:.0f} %"
        fam.add_row(r.family, f"{r.a_us / 1e3:.3f}", f"{r.b_us / 1e3:.3f}",
                    f"{r.delta_us / 1e3:+.3f}", share)  # fmt: skip
    console.print(fam)
    top = Table(title="Kernels that moved most")
    for col in ("kernel", "family", "A n", "B n", "delta ms", "share"):
        top.add_column(col, justify="left" if col in ("kernel", "family") else "right")
    for k in d.top:
        share = "" if k.share is None else f"{k.share * 100:.0f} %"
        top.add_row(k.name[:70], k.family, str(k.a_count), str(k.b_count),
                    f"{k.delta_us / 1e3:+.3f}", share)  # fmt: skip
    console.print(top)
    _show_frames(console, frames)
    for w in d.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    console.print(d.reconciliation)


@profile_app.command("diff")
def diff_cmd(
    a: Path = typer.Argument(..., help="Leg A: capture dir, trace file, or a profile run dir."),
    b: Path | None = typer.Argument(None, help="Leg B (omit when A is a profile run dir)."),
    out: Path | None = typer.Option(None, "--out", help="Where summary.md and the picture go."),
    top: int = typer.Option(15, "--top", help="Kernels to list."),
    as_json: bool = JsonOption,
) -> None:
    """Where the GPU time went between two captures of the same workload."""
    console = human(as_json)
    with user_errors():
        if b is None:
            data = load_run(a)
            if data is None:
                raise VllmdiagError(
                    "one argument must be a profile run directory (with profile.json)",
                    where=str(a),
                    hint="give two captures: vllmdiag profile diff A B",
                )
            caps = data.get("captures")
            pairs = [
                (str(c["leg"]), a / str(c["leg"]) / Path(str(c["out"])).name)
                for c in (caps if isinstance(caps, list) else [])
                if isinstance(c, dict) and c.get("ok") and c.get("backend") in ("torch", "nsys")
            ]
            uniq = list(dict(pairs).items())
            if len(uniq) < 2:
                raise VllmdiagError("the run has fewer than two legs with a GPU capture",
                                    where=str(a))  # fmt: skip
            (na, pa), (nb, pb) = uniq[0], uniq[1]
            result = _diff_paths(pa, pb, na, nb, top, out or a / "diff", console)
        else:
            dest = out or (a if a.is_dir() else a.parent) / f"diff-vs-{b.name}"
            if _is_pyspy(a) and _is_pyspy(b):
                result = {"pyspy": _spy_only(a, b, _label(a), _label(b), top, dest, console)}
            else:
                result = _diff_paths(a, b, None, None, top, dest, console)
        if as_json:
            emit_json(result)


def _capture_and_diff(
    legs: list[LegTarget], workload: Workload, out: Path, capture: list[str], top: int,
    as_json: bool, journal: Journal | None = None,
) -> None:  # fmt: skip
    console = human(as_json)
    run = profile_legs(legs, workload, out, capture, observer=_observer(console),
                       journal=journal)  # fmt: skip
    for w in run.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    result = _diff_run(run, top, console)
    if as_json:
        emit_json(result)
    failed = [c for c in run.captures if not c.ok]
    if failed and "diff" not in result:
        raise typer.Exit(1)


@profile_app.command(
    "capture", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def capture_cmd(
    ctx: typer.Context,
    leg: list[str] = typer.Option(..., "--leg", help="NAME=PATH of a venv or python; twice."),
    script: Path | None = typer.Option(None, "--script", help="A Python workload."),
    command: str | None = typer.Option(None, "--command", help="A vLLM command line instead."),
    capture: list[str] = CaptureOpt,
    warmup: int = typer.Option(3, "--warmup", help="Launcher warm-up steps (not captured)."),
    steps: int = typer.Option(10, "--steps", help="Launcher steps captured."),
    out: Path = typer.Option(Path("runs/profile"), "--out", help="Run directory."),
    top: int = typer.Option(15, "--top"),
    as_json: bool = JsonOption,
) -> None:
    """Capture a script or a vLLM command on existing environments, then diff them."""
    import shlex

    with user_errors():
        if (script is None) == (command is None):
            raise VllmdiagError("give exactly one of --script or --command")
        targets = [_leg_path(v) for v in leg]
        w = Workload(
            script=script.resolve() if script else None,
            script_args=tuple(ctx.args),
            argv=tuple(shlex.split(command)) if command else (),
            warmup=warmup,
            steps=steps,
        )
        _capture_and_diff(targets, w, out, capture, top, as_json)


@profile_app.command(
    "run", hidden=True,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)  # fmt: skip
def run_cmd(
    recipe: Path = typer.Argument(..., help="The recipe YAML."),
    legs: list[str] = typer.Option(..., "--legs", help="Two leg names of the recipe."),
    workload: str | None = typer.Option(None, "--workload", "-w"),
    capture: list[str] = CaptureOpt,
    warmup: int = typer.Option(3, "--warmup"),
    steps: int = typer.Option(10, "--steps"),
    out: Path | None = typer.Option(None, "--out", help="Run directory."),
    runs_root: Path = typer.Option(Path("runs"), "--runs-root"),
    top: int = typer.Option(15, "--top"),
    as_json: bool = JsonOption,
) -> None:
    """Profile a recipe's workload on two of its legs (``vllmdiag profile RECIPE``)."""
    from vllmdiag.profile.recipe_run import prepare

    with user_errors():
        console = human(as_json)
        targets, w, run_dir, journal = prepare(
            recipe, _split_legs(legs), workload, warmup=warmup, steps=steps, out=out,
            runs_root=runs_root, say=console.print,
        )  # fmt: skip
        _capture_and_diff(targets, w, run_dir, capture, top, as_json, journal)


def _split_legs(values: list[str]) -> list[str]:
    return [p for v in values for p in v.split(",") if p]


def register(app: typer.Typer) -> None:
    """Add ``vllmdiag profile`` to the app."""
    app.add_typer(profile_app, name="profile")
