"""What a reproduction of a ``path:`` leg (a machine's own environment, used as it is)
installs: the vLLM release, and only the packages whose versions differ from what that
release resolves to, each with why it is pinned. The machine's other packages (its
image's botorch, jax, ...) are not what vLLM runs on, and are left out.

The release's own resolve is ``uv pip compile vllm==X`` as of the run's start (no wheel
is downloaded); where it cannot be made (no index), the caller falls back to the
machine's whole freeze and says so.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from vllmdiag.jobs.window.consumers import Resolve, fresh_resolve


@dataclass(frozen=True)
class ReleasePins:
    """``lines``: requirement lines, each differing pin with its reason as a comment;
    ``left_out``: how many of the machine's packages the release does not pull in;
    ``local``: pins with a local version label (a build from another index)."""

    lines: tuple[str, ...]
    left_out: int
    local: tuple[str, ...] = ()


def from_resolve(vllm: str, resolve: Resolve, machine: Mapping[str, str]) -> ReleasePins:
    """The release and the machine's versions that differ from its resolve (pure)."""
    lines = [f"vllm=={vllm}"]
    local = []
    for name in sorted(resolve.pins):
        if name == "vllm":
            continue
        have, want = machine.get(name), resolve.pins[name]
        if have is None or have == want:
            continue
        lines.append(
            f"{name}=={have}  # the failing machine has {have}; vllm {vllm} resolves {want}"
        )
        if "+" in have:
            local.append(f"{name}=={have}")
    left_out = sum(1 for name in machine if name not in resolve.pins and name != "vllm")
    return ReleasePins(tuple(lines), left_out, tuple(local))


@functools.lru_cache(maxsize=8)
def _resolve(
    requirement: str, python: str, exclude_newer: str | None, index_url: str | None
) -> Resolve:
    """One resolve per release, python and date in a process (drafts of several runs of
    one release ask the same)."""
    return fresh_resolve(requirement, python, exclude_newer=exclude_newer, index_url=index_url)


def release_pins(
    vllm: str,
    python: str,
    machine: Mapping[str, str],
    *,
    exclude_newer: str | None,
    index_url: str | None,
) -> ReleasePins | str:
    """The pins, or why the release's resolve could not be made."""
    resolve = _resolve(f"vllm=={vllm}", python, exclude_newer, index_url)
    if resolve.error is not None or not resolve.pins:
        return resolve.error or "the resolve pinned nothing"
    return from_resolve(vllm, resolve, machine)
