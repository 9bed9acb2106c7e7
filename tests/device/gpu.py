"""What is on the GPUs now, as nvidia-smi reports it."""

from __future__ import annotations

import subprocess


def gpu_apps() -> list[str]:
    """``pid, used_memory`` of every process on the GPUs (empty: none)."""
    done = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]
