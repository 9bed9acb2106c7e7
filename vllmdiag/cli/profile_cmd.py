"""CLI: ``vllmdiag profile`` — capture one workload on two sides, and diff the captures.

vllmdiag profile RECIPE --legs A B | --arms A B [--leg L] [--workload W] [--capture ...]
vllmdiag profile capture --leg A=/venv/a --leg B=/venv/b --script work.py [-- ARGS]
vllmdiag profile diff RUN | A B   (a profile run; or capture directories, trace files)

Arguments are parsed here (the recipe's command in :mod:`profile_run_cmd`) and results
rendered (:mod:`profile_render`); the jobs live in :mod:`vllmdiag.jobs.profile`.
"""

from __future__ import annotations

import difflib
import shlex
from pathlib import Path

import typer
from rich.text import Text

from vllmdiag import codec
from vllmdiag.cli import profile_render as show
from vllmdiag.cli.forms import FormGroup
from vllmdiag.cli.output import JsonOption, emit_json, human, user_errors, warn_lines
from vllmdiag.cli.run_opts import AllowContaminatedOption, RunsRootOption, WaitOption
from vllmdiag.cli.values import path_value
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.profile import CaptureSettings, ProfileOutcome, Workload, backend, diff_inputs
from vllmdiag.plan import bench_command as benchmod
from vllmdiag.services.proc import Interrupted
from vllmdiag.spine.rundir import layout
from vllmdiag.spine.runner.options import RunOptions

_MULTI = ("--legs", "--arms", "--capture", "-c")
_RECIPE_SUFFIXES = (".yaml", ".yml")


class _ProfileGroup(FormGroup):
    """``profile RECIPE ...`` runs the hidden ``run`` command; named commands as usual;
    a word that is neither a command nor a recipe file is a typo, said so."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        args = _expand_multi(args)
        first = args[0] if args else ""
        if first and first not in self.commands and not first.startswith("-"):
            if _looks_like_recipe(first):
                args = ["run", *args]
            else:
                names = [n for n, c in self.commands.items() if not c.hidden]
                close = difflib.get_close_matches(first, names, n=1)
                raise typer.BadParameter(
                    f"{first!r} is neither a profile command ({', '.join(names)}) nor a "
                    "recipe file" + (f"; did you mean {close[0]!r}?" if close else ""),
                    ctx=ctx,
                    param_hint="COMMAND or RECIPE",
                )
        return super().parse_args(ctx, args)


def _looks_like_recipe(arg: str) -> bool:
    """A path (a missing one is the recipe loader's to report) or a shipped recipe name."""
    from vllmdiag.services.config.recipe_load import resolve_recipe_path

    return arg.endswith(_RECIPE_SUFFIXES) or "/" in arg or resolve_recipe_path(Path(arg)).exists()


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
    help="Profile one workload on two sides and diff where the GPU time went.\n\n"
    "vllmdiag profile RECIPE --legs A B (two legs) or --arms baseline ARM [--leg L] (two "
    "arms on one leg) captures a recipe's workload serially into a new run directory and "
    "diffs the sides; 'capture' does the same for existing environments; 'diff' compares "
    "two captures (run directories, Kineto .json/.json.gz, nsys .sqlite, py-spy raw).",
    no_args_is_help=True,
)

CaptureOpt = typer.Option(
    ["torch"],
    "--capture",
    "-c",
    help="Capture backend: torch (vLLM's own profiler, or the torch launcher for a "
    "script), nsys or py-spy; repeat for several.",
)
TopOpt = typer.Option(15, "--top", min=1, help="Kernel and op rows to list (largest change first).")
WarmupOpt = typer.Option(
    None,
    "--warmup",
    min=0,
    help="Steps run before the capture, not captured: the torch launcher's for a script, "
    "vLLM's profiler delay_iterations for a vllm command (default: the recipe's "
    f"profile.warmup, else {CaptureSettings.warmup}).",
)
StepsOpt = typer.Option(
    None,
    "--steps",
    min=1,
    help="Steps captured (vLLM's profiler max_iterations); the diff judges step times "
    "against their step-to-step spread, so give it enough (default: the recipe's "
    f"profile.steps, else {CaptureSettings.steps}).",
)


@profile_app.command("diff")
def diff_cmd(
    a: Path = typer.Argument(
        ..., help="A profile run directory, or side A: a capture directory or a trace file."
    ),
    b: Path | None = typer.Argument(None, help="Side B (omit when A is a profile run)."),
    out: Path | None = typer.Option(
        None,
        "--out",
        parser=path_value,
        help="Where summary.md, diff.json and the picture go (default: RUN/diff for a "
        "profile run, else a new directory under --runs-root).",
    ),
    top: int = TopOpt,
    runs_root: Path = RunsRootOption,
    as_json: bool = JsonOption,
) -> None:
    """Where the GPU time went between two captures of the same workload."""
    console = human(as_json)
    with user_errors():
        res = diff_inputs(a, b, out=out, top=top, runs_root=runs_root)
        show.result(console, res)
        if as_json:
            emit_json(codec.dump(res))


def finish(outcome: ProfileOutcome, as_json: bool, again: list[str] | None = None) -> None:
    """Render a capture run's outcome; exit 1 when nothing could be compared, 128+N when
    a signal stopped it (``again``: the command that resumes it)."""
    console = human(as_json)
    for w in outcome.run.warnings:
        console.print(Text.assemble(("warning: ", "yellow"), w))
    if outcome.diff is not None:
        show.result(console, outcome.diff)
    elif outcome.pyspy is not None:
        show.result(console, outcome.pyspy)
    elif not outcome.interrupted:
        console.print(Text("fewer than two sides have a capture to compare: no diff", "yellow"))
    if as_json:
        emit_json(codec.dump(outcome))
    if outcome.interrupted:
        line = Text("interrupted", style="yellow")
        if again:
            line.append(f": resume with {shlex.join(again)}", style="")
        console.print(line, soft_wrap=True)
        raise typer.Exit(Interrupted(outcome.stopped_by or "SIGINT").exit_code)
    if outcome.failed:
        raise typer.Exit(1)


@profile_app.command(
    "capture", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def capture_cmd(
    ctx: typer.Context,
    leg: list[str] = typer.Option(
        ..., "--leg", help="NAME=PATH of a venv or its python; give it twice."
    ),
    script: Path | None = typer.Option(
        None,
        "--script",
        help="A Python workload (run under the torch launcher); its arguments after --.",
    ),
    command: str | None = typer.Option(
        None, "--command", help="A vLLM command line instead, e.g. 'vllm bench latency --model M'."
    ),
    capture: list[str] = CaptureOpt,
    warmup: int | None = WarmupOpt,
    steps: int | None = StepsOpt,
    out: Path | None = typer.Option(
        None,
        "--out",
        parser=path_value,
        help="A new run directory (default: one under --runs-root).",
    ),
    runs_root: Path = RunsRootOption,
    top: int = TopOpt,
    allow_contaminated: bool = AllowContaminatedOption,
    wait: bool = WaitOption,
    as_json: bool = JsonOption,
) -> None:
    """Capture a script or a vLLM command on existing environments, then diff them."""
    from vllmdiag.jobs.profile import capture_legs, targets_from_paths

    with user_errors():
        if (script is None) == (command is None):
            raise VllmdiagError(
                "give exactly one of --script or --command",
                hint="--script work.py [-- ARGS], or --command 'vllm bench ...'",
            )
        if out is not None:
            _new_out(out)
        backends = tuple(backend(c) for c in capture)
        if command:
            said = benchmod.parse(shlex.split(command))
            warn_lines(human(as_json), (f"--command: {p}" for p in (said.problems if said else ())))
        targets = targets_from_paths(leg)
        w = Workload(
            script=script.resolve() if script else None,
            script_args=tuple(ctx.args),
            argv=tuple(shlex.split(command)) if command else (),
            warmup=CaptureSettings.warmup if warmup is None else warmup,
            steps=CaptureSettings.steps if steps is None else steps,
        )
        with show.ProfileView(human(as_json)) as view:
            run = RunOptions(runs_root=runs_root, allow_contaminated=allow_contaminated, wait=wait)
            outcome = capture_legs(targets, w, backends, out=out, run=run, top=top, observer=view)
        finish(outcome, as_json)


def _new_out(out: Path) -> None:
    """An explicit --out: refused when it already holds a profile run."""
    for marker in ("profile.json", "journal.jsonl", layout.EVENTS):
        if (out / marker).exists():
            raise VllmdiagError(
                "this directory already holds a profile run",
                where=str(out),
                hint="choose another --out, or leave it out for a new one",
            )
