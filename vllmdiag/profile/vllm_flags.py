"""How to switch on vLLM's own torch profiler, read from the leg's ``--help``.

Two spellings exist. Newer vLLM takes ``--profiler-config`` (a JSON object with
``profiler``, ``torch_profiler_dir``, ``torch_profiler_with_stack``, and in some
versions ``delay_iterations`` / ``max_iterations`` to place the captured window); the
``VLLM_TORCH_PROFILER_*`` variables were removed then. Older vLLM reads
``VLLM_TORCH_PROFILER_DIR`` from the environment. Either way the benchmark's own
``--profile`` starts and stops the profiler around the measured run, so both legs
capture the same window. The leg's help text decides, never a version table.
"""

from __future__ import annotations

import json
from pathlib import Path

from vllmdiag.errors import VllmdiagError

#: Iterations skipped before, and captured after, the profiler starts: the same on both
#: legs wherever the leg's ProfilerConfig has the fields.
DELAY_ITERATIONS = 4
MAX_ITERATIONS = 16


def profiler_switch(help_text: str, out_dir: Path) -> tuple[list[str], dict[str, str], str]:
    """(extra argv, extra environment, what was chosen and why) for one leg."""
    argv: list[str] = []
    env: dict[str, str] = {}
    has_profile = "--profile " in help_text or "--profile\n" in help_text
    if "--profiler-config" in help_text:
        config: dict[str, object] = {
            "profiler": "torch",
            "torch_profiler_dir": str(out_dir),
            "torch_profiler_with_stack": False,
        }
        window = []
        for field, value in (
            ("delay_iterations", DELAY_ITERATIONS),
            ("max_iterations", MAX_ITERATIONS),
        ):
            if field in help_text:
                config[field] = value
                window.append(f"{field}={value}")
        argv += ["--profiler-config", json.dumps(config)]
        why = "leg's --help lists --profiler-config: " + (
            ", ".join(window) if window else "window = the benchmark's --profile run"
        )
    elif has_profile:
        env["VLLM_TORCH_PROFILER_DIR"] = str(out_dir)
        env["VLLM_TORCH_PROFILER_WITH_STACK"] = "0"
        why = "leg's --help has --profile but no --profiler-config: VLLM_TORCH_PROFILER_DIR"
    else:
        raise VllmdiagError(
            "this leg's vLLM command shows neither --profiler-config nor --profile",
            hint="use 'vllm bench throughput' or 'vllm bench latency', or capture with nsys",
        )
    if has_profile:
        argv.append("--profile")
    return argv, env, why
