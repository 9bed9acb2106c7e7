"""Ask a leg's own vLLM how its profiler is switched on: its CLI, then its config class.

``vllm bench throughput --help=all`` first (vLLM's grouped help hides the flags behind
``--help``), plain ``--help`` where ``--help=all`` is not understood; where the help
lists ``--profiler-config``, the leg's python reads its ``ProfilerConfig`` fields. Each
answer is asked once per leg and command within a run (two arms on one leg share it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from vllmdiag.jobs.profile import vllm_flags
from vllmdiag.services import proc

HELP_TIMEOUT_S = 300.0
_HELP: dict[tuple[str, ...], tuple[str, str]] = {}
_FIELDS: dict[str, tuple[str, ...] | None] = {}


def _short(argv: Sequence[str]) -> str:
    return " ".join([Path(argv[0]).name, *argv[1:]])


def read_help(prefix: Sequence[str], env: Mapping[str, str]) -> tuple[str, str]:
    """(the help text that lists the most, the command(s) asked) for a vLLM command."""
    key = tuple(prefix)
    if key in _HELP:
        return _HELP[key]
    asked, texts = [], []
    for flag in vllm_flags.HELP_FLAGS:
        cmd = [*prefix, flag]
        done = proc.run(cmd, env=env, timeout=HELP_TIMEOUT_S, capture=True)
        text = done.stdout + done.stderr
        asked.append(_short(cmd))
        texts.append(text)
        if done.ok and vllm_flags.flags_in(text):
            _HELP[key] = (text, asked[-1])
            return _HELP[key]
    _HELP[key] = ("\n".join(texts), " and ".join(asked))
    return _HELP[key]


def config_fields(python: Path, env: Mapping[str, str]) -> tuple[str, ...] | None:
    """The leg's ProfilerConfig field names, or None when its python cannot say."""
    key = str(python)
    if key not in _FIELDS:
        done = proc.run([str(python), "-c", vllm_flags.FIELDS_PROBE], env=env,
                        timeout=HELP_TIMEOUT_S, capture=True)  # fmt: skip
        _FIELDS[key] = vllm_flags.fields_from(done.stdout) if done.ok else None
    return _FIELDS[key]


def profiler_switch(
    python: Path,
    argv: Sequence[str],
    env: Mapping[str, str],
    out_dir: Path,
    window: tuple[int, int] = (vllm_flags.DELAY_ITERATIONS, vllm_flags.MAX_ITERATIONS),
) -> tuple[list[str], dict[str, str], str]:
    """(extra argv, extra environment, why) to profile ``argv`` on the leg of ``python``,
    ``window``: engine iterations skipped, then captured."""
    prefix = []
    for token in argv:
        if token.startswith("-"):
            break
        prefix.append(token)
    text, asked = read_help(prefix, env)
    fields = None
    if "--profiler-config" in vllm_flags.flags_in(text):
        fields = config_fields(python, env)
    return vllm_flags.profiler_switch(text, out_dir, fields, asked, window)
