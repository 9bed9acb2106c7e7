"""How to switch on vLLM's own torch profiler, read from the leg's own CLI.

vLLM 0.18, 0.26 and 0.29 (their wheels' source, pinned by ``tests/e2e/test_vllm_contract.py``)
all take ``--profile`` on ``vllm bench throughput`` / ``latency`` and a
``--profiler-config`` JSON (``ProfilerConfig``: ``profiler``, ``torch_profiler_dir``,
``torch_profiler_with_stack``, ``delay_iterations``, ``max_iterations``,
``ignore_frontend``, ...); the ``VLLM_TORCH_PROFILER_*`` variables are gone. Older vLLM
read ``VLLM_TORCH_PROFILER_DIR`` from the environment. Their ``--help`` prints grouped
summaries only; ``--help=all`` lists every flag, so the leg is asked with ``--help=all``
first and plain ``--help`` where that is not understood. The help text decides the
spelling, never a version table; which ``ProfilerConfig`` fields exist comes from the
leg's own class (the help does not list them), so both legs skip and capture the same
iterations wherever they can.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from vllmdiag.errors import VllmdiagError

#: Iterations skipped before, and captured after, the profiler starts (``--warmup`` /
#: ``--steps``, or the recipe's ``profile:``): the same on both sides wherever the leg's
#: ProfilerConfig has the fields. 32 steps give a step-time band to judge a change by
#: (:mod:`vllmdiag.jobs.profile.diff.steptimes`); 12 did not.
DELAY_ITERATIONS = 4
MAX_ITERATIONS = 32
HELP_FLAGS = ("--help=all", "--help")
#: Read by the leg's python: its ProfilerConfig's fields, as JSON (no GPU needed).
FIELDS_PROBE = (
    "import dataclasses, json\n"
    "from vllm.config.profiler import ProfilerConfig\n"
    "print(json.dumps([f.name for f in dataclasses.fields(ProfilerConfig)]))\n"
)

_FLAG = re.compile(r"(?<![\w-])(--profiler-config|--profile)(?![\w-])")


def flags_in(help_text: str) -> set[str]:
    """The profiler flags a help text lists (``--profile`` not mistaken for a prefix of
    ``--profiler-config`` or ``--profile-dir``)."""
    return set(_FLAG.findall(help_text))


def fields_from(output: str) -> tuple[str, ...] | None:
    """ProfilerConfig's field names from :data:`FIELDS_PROBE`'s output, None if unread."""
    for line in reversed(output.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, list) and all(isinstance(x, str) for x in data):
            return tuple(data)
    return None


def profiler_switch(
    help_text: str,
    out_dir: Path,
    fields: Sequence[str] | None = None,
    asked: str = "the leg's vLLM command --help",
    iterations: tuple[int, int] = (DELAY_ITERATIONS, MAX_ITERATIONS),
) -> tuple[list[str], dict[str, str], str]:
    """(extra argv, extra environment, what was chosen and why) for one leg.

    ``fields``: the leg's ProfilerConfig fields (None: unknown, the window fields are
    used only where the help text names them); ``asked``: the command(s) that printed
    ``help_text``, for the error when neither spelling is there; ``iterations``: engine
    iterations skipped, then captured.
    """
    found = flags_in(help_text)
    argv: list[str] = []
    env: dict[str, str] = {}
    if "--profiler-config" in found:
        known = set(fields) if fields is not None else None

        def has(name: str) -> bool:
            return name in known if known is not None else name in help_text

        config: dict[str, object] = {"profiler": "torch", "torch_profiler_dir": str(out_dir)}
        if has("torch_profiler_with_stack"):
            config["torch_profiler_with_stack"] = False
        window = []
        for name, value in (("delay_iterations", iterations[0]),
                            ("max_iterations", iterations[1])):  # fmt: skip
            if has(name):
                config[name] = value
                window.append(f"{name}={value}")
        if window and has("ignore_frontend"):
            config["ignore_frontend"] = True  # the front end's profiler ignores the window
        argv += ["--profiler-config", json.dumps(config)]
        source = "its ProfilerConfig" if known is not None else "its help text"
        why = f"{asked} lists --profiler-config; " + (
            f"window from {source}: {', '.join(window)}"
            if window
            else f"{source} has no delay/max iterations: the window is the benchmark's "
            "whole --profile run"
        )
    elif "--profile" in found:
        env["VLLM_TORCH_PROFILER_DIR"] = str(out_dir)
        env["VLLM_TORCH_PROFILER_WITH_STACK"] = "0"
        why = f"{asked} lists --profile but no --profiler-config: VLLM_TORCH_PROFILER_DIR"
    else:
        printed = " ".join(help_text.split())
        printed = printed[-500:] if printed else "nothing"
        raise VllmdiagError(
            f"neither --profiler-config nor --profile is listed by {asked}; it printed: {printed}",
            hint="profile 'vllm bench throughput' or 'vllm bench latency', or capture "
            "with nsys (-c nsys)",
        )
    if "--profile" in found:
        argv.append("--profile")
    return argv, env, why
