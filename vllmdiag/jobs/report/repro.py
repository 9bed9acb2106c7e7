"""A reproduction that pastes and runs: a fresh uv environment with the failing leg's
exact pins (its ``uv pip freeze``), the scripts the command runs written out beside it,
and the failing cell's own command and environment; then the sufficient change, and the
same command passing.

Paths of the machine that ran it are rewritten where the reproduction can stand in for
them (the leg's venv → ``.venv``, a script → its copy, the cell's output directory →
``out``); any other absolute path is named in a note, never silently kept.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vllmdiag.jobs.report import freeze, md
from vllmdiag.jobs.report.case import Case
from vllmdiag.jobs.report.inputs import RunEvidence
from vllmdiag.jobs.report.release_pins import ReleasePins, release_pins
from vllmdiag.jobs.window import ConsumerReport
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import LegConfig
from vllmdiag.model.stack import EnvRecord
from vllmdiag.services import redact
from vllmdiag.spine.journal import RECIPE_FILES

VENV = ".venv"
#: Scripts and small data files a command names are written into the reproduction.
EMBED_SUFFIXES = (".py", ".sh", ".json", ".jsonl", ".yaml", ".yml", ".txt", ".toml", ".jinja")
EMBED_MAX_BYTES = 64 * 1024
#: A leg whose "venv" is one of these is the system's python: its paths stay as they are.
SYSTEM = ("", "/usr", "/usr/local", "/opt/conda")


def _same(value: str) -> str:
    return value


@dataclass
class Script:
    """What one reproduction block is made of, built up as the commands are rewritten.
    ``clean`` redacts one word of a command before it is quoted for the shell (a
    ``<host>`` written unquoted would be a redirection)."""

    lines: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # name → content
    notes: list[str] = field(default_factory=list)
    out_dir: bool = False
    clean: Callable[[str], str] = _same
    what: str = ""  # what the setup installs, in words (set where it is not the freeze)


def python_minor(env: EnvRecord) -> str | None:
    version = env.stack.python
    return ".".join(version.split(".")[:2]) if version else None


def index_args(run: RunEvidence, leg: str) -> list[str]:
    config = _leg_config(run, leg)
    if config is None:
        return []
    args = ["--index-url", config.index_url] if config.index_url else []
    for url in config.extra_index_urls:
        args += ["--extra-index-url", url]
    return args


def _leg_config(run: RunEvidence, leg: str) -> LegConfig | None:
    if run.recipe is None:
        return None
    return run.recipe.legs.get(leg) or run.recipe.legs.get(leg.split("+", 1)[0])


def _release(run: RunEvidence, env: EnvRecord, machine: dict[str, str]) -> ReleasePins | str | None:
    """For a ``path:`` leg with vLLM: the release's pins (or why they could not be
    made); None for a leg vllmdiag built (its freeze is what it asked for)."""
    config = _leg_config(run, env.leg)
    minor = python_minor(env)
    if config is None or config.path is None or not env.stack.vllm or minor is None:
        return None
    return release_pins(
        env.stack.vllm,
        minor,
        machine,
        exclude_newer=run.started,
        index_url=config.index_url,
    )


def setup(run: RunEvidence, env: EnvRecord) -> Script:
    """``uv venv`` and ``uv pip install`` of the leg's exact pins."""
    script = Script()
    minor = python_minor(env)
    script.lines.append(f"uv venv --python {minor} {VENV}" if minor else f"uv venv {VENV}")
    install = ["uv", "pip", "install", "--python", f"{VENV}/bin/python", *index_args(run, env.leg)]
    pins = freeze.read(env.freeze)
    release = _release(run, env, pins.versions)
    if isinstance(release, ReleasePins):
        script.files["requirements.txt"] = "\n".join(release.lines) + "\n"
        script.lines.append(_join([*install, "-r", "requirements.txt"]))
        script.what = (
            f"vLLM {env.stack.vllm} and the "
            f"{md.plural(len(release.lines) - 1, 'package')} whose versions on the failing "
            f"machine differ from what that release resolves to (each line says why; the "
            f"machine's {md.plural(release.left_out, 'other package')} are not vLLM's and are "
            "left out)"
        )
        if release.local:
            script.notes.append(
                ", ".join(md.code(p) for p in release.local)
                + " carry a local build label: install them from the index that builds them "
                "(for torch, https://download.pytorch.org/whl/ and its CUDA tag)"
            )
        return script
    if release is not None:
        script.notes.append(
            f"the release's own resolve could not be made ({release.splitlines()[0][:200]}): "
            "this pins the failing machine's whole environment"
        )
    if pins.lines:
        head = []
        if pins.localized:
            head.append(
                f"# {md.plural(pins.localized, 'wheel was', 'wheels were')} installed from a "
                "local file there: pinned here to the same version from the index"
            )
        if pins.lost:
            script.notes.append(
                "the run's record lost the version of "
                + ", ".join(md.code(n) for n in pins.lost)
                + ": installed unpinned here"
            )
        script.files["requirements.txt"] = "\n".join([*head, *pins.lines]) + "\n"
        script.lines.append(_join([*install, "-r", "requirements.txt"]))
    elif env.requirements:
        script.notes.append(
            "the leg's `uv pip freeze` was not recorded: this installs its requirements, "
            "not its exact pins"
        )
        script.lines.append(_join([*install, *env.requirements]))
    return script


def command(
    script: Script,
    run: RunEvidence,
    cell: CellResult,
    env: EnvRecord | None,
) -> str:
    """The cell's command as it ran, its paths rewritten for the reproduction."""
    tokens = [_token(script, run, cell, env, t, i) for i, t in enumerate(cell.argv)]
    assigns: list[str] = []
    hidden: list[str] = []
    for name, value in sorted(run.cell_env.get(cell.id, {}).items()):
        if redact.MASK in value:
            hidden.append(name)
        else:
            assigns.append(f"{name}={_word(script.clean(value))}")
    line = " ".join([*assigns, *(_word(script.clean(t)) for t in tokens)])
    if hidden:
        names = ", ".join(hidden)
        line = f"# also set when it ran (values withheld: set your own): {names}\n{line}"
    return line


def _token(
    script: Script, run: RunEvidence, cell: CellResult, env: EnvRecord | None, token: str, i: int
) -> str:
    if env is not None:
        root = env.path.rstrip("/")
        if root not in SYSTEM and (token == root or token.startswith(root + "/")):
            return VENV + token[len(root) :]
        if i == 0 and token == env.python:
            return f"{VENV}/bin/python"
    out = str(run.path / "cells" / cell.id / "out")
    if token == out or token.startswith(out + "/"):
        script.out_dir = True
        return "out" + token[len(out) :]
    if not token.startswith("/"):
        return token
    path = Path(token)
    embedded = _embed(script, path)
    if embedded is None:
        embedded = _embed_kept(script, run, path)
    if embedded is not None:
        return embedded
    script.notes.append(
        f"{md.code(token)} is a path on the machine that ran it: put your copy there, "
        "or change it in the command"
    )
    return token


def _embed(script: Script, path: Path, name: str | None = None) -> str | None:
    if path.suffix not in EMBED_SUFFIXES:
        return None
    try:
        if not path.is_file() or path.stat().st_size > EMBED_MAX_BYTES:
            return None
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    name = name or path.name
    if script.files.get(name, content) != content:
        name = f"{path.parent.name}_{path.name}"
    script.files[name] = content
    return name


def _embed_kept(script: Script, run: RunEvidence, path: Path) -> str | None:
    """A recipe file the run kept (``recipe/`` in its directory), where the recipe's
    folder is not on this machine."""
    if run.recipe is None:
        return None
    try:
        rel = path.relative_to(run.recipe.recipe_dir)
    except ValueError:
        return None
    kept = run.path / RECIPE_FILES / rel
    if ".." in rel.parts or kept.is_symlink():
        return None
    return _embed(script, kept, name=path.name)


def render(script: Script, commands: Sequence[str]) -> str:
    """The block: setup lines, files written with quoted heredocs, the commands."""
    out = list(script.lines[:1])
    for name, content in script.files.items():
        out.append(_heredoc(name, content))
    out += script.lines[1:]
    if script.out_dir:
        out.append("mkdir -p out")
    out += commands
    return "\n".join(out)


def _heredoc(name: str, content: str) -> str:
    lines = set(content.splitlines())
    tag = next(t for t in (f"EOF{n}" if n else "EOF" for n in range(1000)) if t not in lines)
    body = content if content.endswith("\n") else content + "\n"
    return f"cat > {shlex.quote(name)} <<'{tag}'\n{body}{tag}"


def _join(tokens: Sequence[str]) -> str:
    return " ".join(shlex.quote(t) for t in tokens)


def _word(value: str) -> str:
    """One redacted word for the shell: quoted, a home path kept as ``"$HOME"/...``."""
    if value == "~" or value.startswith("~/"):
        rest = value[2:]
        return '"$HOME"' + (f"/{shlex.quote(rest)}" if rest else "")
    return shlex.quote(value)


def fix_install(run: RunEvidence, leg: str, pins: Sequence[str]) -> str:
    install = ["uv", "pip", "install", "--python", f"{VENV}/bin/python", *index_args(run, leg)]
    return _join([*install, *pins])


def section(
    case: Case,
    consumer: ConsumerReport | None,
    package: str | None,
    clean: Callable[[str], str] = _same,
) -> str | None:
    """The reproduction: setup and the failing command, then the fix and the same
    command passing (a measured fix; else the window's suggested bound, said unmeasured)."""
    cell, env, run = case.cell, case.env, case.run
    if env is None or not cell.argv:
        return None
    script = setup(run, env)
    script.clean = clean
    failing = command(script, run, cell, env)
    pins = freeze.read(env.freeze)
    what = script.what or (
        f"its exact pins ({md.plural(len(pins.lines), 'package')}, from its `uv pip freeze`)"
        if pins.lines
        else "its requirements"
    )
    out = [
        f"The smallest failing cell, {md.code(cell.id)} (workload {md.code(cell.workload)}, "
        f"leg {md.code(cell.leg)}): a fresh uv environment with {what}, then the command "
        "that failed.",
        "",
        md.fence(render(script, [failing]), "bash"),
        "",
        f"It fails with {md.code(case.signature)} ({_ended(cell)}).",
    ]
    fixed = _fixed(case, script, consumer, package, clean)
    if fixed is not None:
        out += ["", *fixed]
    if script.notes:
        out += ["", "Notes:", *(f"- {n}" for n in dict.fromkeys(script.notes))]
    return "\n".join(out)


def _ended(cell: CellResult) -> str:
    if cell.outcome is Outcome.TIMEOUT:
        return f"it did not finish within {cell.elapsed_s:.0f} s"
    return f"exit status {cell.rc}"


def _fixed(
    case: Case,
    script: Script,
    consumer: ConsumerReport | None,
    package: str | None,
    clean: Callable[[str], str],
) -> list[str] | None:
    fix, run = case.fix, case.run
    second = Script(clean=clean)
    if fix is not None and fix.cell is not None:
        lines = [fix_install(run, case.cell.leg, fix.pins)] if fix.pins else []
        lines.append(command(second, run, fix.cell, fix.env))
        change = md.code(fix.arm.describe()) if fix.arm is not None else md.code(fix.verdict.name)
        intro = f"With the one sufficient change, {change}, the same command passes:"
    elif consumer is not None and consumer.suggested_specifier and package:
        spec = package + consumer.suggested_specifier
        lines = [fix_install(run, case.cell.leg, [spec]), command(second, run, case.cell, case.env)]
        intro = f"With the suggested bound {md.code(spec)} (not measured by these runs):"
    else:
        return None
    second.files = {k: v for k, v in second.files.items() if script.files.get(k) != v}
    second.lines = []
    script.notes += second.notes
    return [intro, "", md.fence(render(second, lines), "bash")]
