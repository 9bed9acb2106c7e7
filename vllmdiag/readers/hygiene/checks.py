"""The doctor's checks as pure functions over what the plugins probe reported, what
``nvidia-smi`` listed and the environment a run will get."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from packaging.version import InvalidVersion, Version

from vllmdiag.readers.hygiene.findings import CONTAMINATED, OK, SKIPPED, WARNING, Finding

#: Distributions whose vllm.* entry points are vLLM's own.
OWN = frozenset({"vllm"})
_TRUE = ("1", "true", "yes", "on")


def _canon(name: str | None) -> str:
    return (name or "").lower().replace("_", "-")


def plugins(probe: Mapping[str, Any]) -> list[Finding]:
    foreign = [p for p in probe.get("plugins", []) if _canon(p.get("distribution")) not in OWN]
    if not foreign:
        return [Finding(OK, "plugins", "no third-party plugin in the vllm.* entry-point groups")]
    out = []
    allow = probe.get("vllm_plugins_env")
    for p in foreign:
        out.append(
            Finding(
                CONTAMINATED,
                "plugin",
                f"{p.get('distribution')} registers {p['group']}:{p['name']} -> {p['value']};"
                " vLLM loads it in every process and it can patch vLLM's classes",
                hint=f"use a leg without {p.get('distribution')} (or set VLLM_PLUGINS to an "
                "allow-list that excludes it" + (f"; VLLM_PLUGINS={allow}" if allow else "") + ")",
            )
        )
    return out


def console_script(probe: Mapping[str, Any]) -> list[Finding]:
    info = probe.get("vllm_script") or {}
    owners = {_canon(o) for o in info.get("owners", [])} | {
        _canon(o) for o in info.get("declared_by", [])
    }
    foreign = sorted(o for o in owners if o not in OWN)
    if foreign:
        return [
            Finding(
                CONTAMINATED,
                "vllm-script",
                f"{info.get('path')} is installed by {', '.join(foreign)}, not by vllm: "
                "`vllm ...` in this leg may not run vLLM's own CLI",
                hint="reinstall vllm in a fresh leg, or use a leg without " + ", ".join(foreign),
            )
        ]
    if probe.get("vllm") and not info.get("exists"):
        return [
            Finding(
                WARNING,
                "vllm-script",
                f"vllm is installed but {info.get('path')} is missing",
                hint="workloads that call `vllm` will fail",
            )
        ]
    return [
        Finding(
            OK,
            "vllm-script",
            "the vllm console script is vLLM's own"
            if info.get("exists")
            else "no vllm console script",
        )
    ]


def _base(version: str) -> Version | None:
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    return Version(v.base_version)


def flashinfer(probe: Mapping[str, Any]) -> list[Finding]:
    versions = probe.get("flashinfer") or {}
    main = versions.get("flashinfer-python")
    if not main:
        return [Finding(OK, "flashinfer", "flashinfer-python is not installed")]
    out = []
    for extra in ("flashinfer-jit-cache", "flashinfer-cubin"):
        got = versions.get(extra)
        if got is None:
            out.append(
                Finding(
                    WARNING,
                    "flashinfer-" + extra.split("-", 1)[1],
                    f"{extra} is not installed next to flashinfer-python {main}: kernels are "
                    "JIT-built at run time (slow first runs; a gcc internal compiler error "
                    "failed six MoE models in the seeds)",
                    hint=f"add {extra}=={main} to the leg",
                )
            )
        elif _base(got) != _base(main):
            out.append(
                Finding(
                    CONTAMINATED,
                    "flashinfer-mismatch",
                    f"{extra} {got} does not match flashinfer-python {main}: prebuilt "
                    "kernels from another release",
                    hint=f"pin {extra}=={main}",
                )
            )
    return out or [
        Finding(OK, "flashinfer", f"flashinfer-python, -jit-cache and -cubin all {main}")
    ]


def parse_compute_apps(text: str) -> list[tuple[int, str, str]]:
    """``nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader``
    → [(pid, name, memory)]."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            out.append((int(parts[0]), parts[1], parts[2]))
    return out


def gpu_processes(
    apps: list[tuple[int, str, str]] | None, own_pids: Iterable[int] = (), error: str | None = None
) -> list[Finding]:
    if apps is None:
        return [Finding(SKIPPED, "gpu-processes", error or "nvidia-smi not found: not checked")]
    mine = set(own_pids)
    others = [a for a in apps if a[0] not in mine]
    if not others:
        return [Finding(OK, "gpu-processes", "no other process on the GPUs")]
    listed = "; ".join(f"pid {pid} {name} ({mem})" for pid, name, mem in others[:8])
    return [
        Finding(
            CONTAMINATED,
            "gpu-processes",
            f"{len(others)} other process(es) already on the GPUs: {listed}. The node is not "
            "exclusive, so timings are not clean (the seeds voided a whole round for this)",
            hint="wait for them or stop them; --allow-contaminated records and runs anyway",
        )
    ]


def logging_hazard(run_env: Mapping[str, str]) -> list[Finding]:
    level = run_env.get("VLLM_LOGGING_LEVEL", "").upper()
    no_stats = run_env.get("VLLM_NO_USAGE_STATS", "") == "1" or any(
        run_env.get(k, "").lower() in _TRUE for k in ("DO_NOT_TRACK", "VLLM_DO_NOT_TRACK")
    )
    if level == "DEBUG" and not no_stats:
        return [
            Finding(
                WARNING,
                "debug-usage-stats",
                "VLLM_LOGGING_LEVEL=DEBUG with usage stats on: DEBUG output corrupts the "
                "cpuinfo output the usage-stats thread parses, which prints a harmless "
                "traceback (a harness that treats any traceback as fatal kills a healthy run)",
                hint="set VLLM_NO_USAGE_STATS=1 with DEBUG logging",
            )
        ]
    return [Finding(OK, "debug-usage-stats", "no DEBUG-logging/usage-stats hazard")]


def known_vars(probe: Mapping[str, Any]) -> list[Finding]:
    if not probe.get("vllm"):
        return [Finding(OK, "env-vars", "vllm is not installed in this leg")]
    known = probe.get("known_env_vars")
    if known is None:
        return [
            Finding(
                WARNING,
                "env-vars",
                "could not read the variables this vLLM knows "
                f"({probe.get('known_env_vars_source')}); env arms cannot be checked for effect",
            )
        ]
    return [Finding(OK, "env-vars", f"this vLLM knows {len(known)} environment variables")]


def leftover_cells(
    left: Sequence[tuple[int, str]],
    running: Sequence[tuple[int, str]],
    lock_holder: str | None,
) -> list[Finding]:
    """Tagged cell processes of this node, as (pid, cell): ``left`` by a vllmdiag that is
    gone (an earlier, killed run: an engine among them holds GPU memory), ``running``
    under a vllmdiag job that still runs (``lock_holder``: the node lock's holder)."""
    out = []
    if left:
        out.append(
            Finding(
                CONTAMINATED,
                "leftover-cells",
                f"{len(left)} process(es) an earlier, killed vllmdiag run left running: "
                + _listed(left),
                hint="the next matrix (or any job that takes the node lock) ends them; or "
                "end them now: kill " + " ".join(str(pid) for pid, _ in left),
            )
        )
    if running or lock_holder is not None:
        job = f"a vllmdiag job (pid {lock_holder}) holds the node lock" if lock_holder else ""
        cells = f"{len(running)} cell process(es) of a running job: {_listed(running)}"
        out.append(
            Finding(
                WARNING,
                "running-job",
                "; ".join(x for x in (job, cells if running else "") if x),
                hint="its numbers and yours would mix: wait for it to finish",
            )
        )
    if not left:
        out.append(Finding(OK, "leftover-cells", "no vllmdiag cell process left running"))
    return out


def _listed(pids: Sequence[tuple[int, str]]) -> str:
    shown = ", ".join(f"pid {pid} (cell {cell})" for pid, cell in pids[:12])
    return shown + (f" and {len(pids) - 12} more" if len(pids) > 12 else "")
