"""Run the doctor's checks on a leg: the plugins probe in the leg's own python, and
``nvidia-smi`` for other GPU processes."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from vllmdiag import probes
from vllmdiag.errors import EnvError, ProcessError, VllmdiagError
from vllmdiag.readers.hygiene import checks, declared
from vllmdiag.readers.hygiene.findings import SKIPPED, WARNING, DoctorReport, Finding
from vllmdiag.services import proc, stray
from vllmdiag.services.envs import Env
from vllmdiag.services.locks import holder_if_held
from vllmdiag.services.paths import node_lock_path

_PROBES: dict[tuple[str, str], dict[str, Any]] = {}


def probe(env: Env) -> dict[str, Any]:
    """The plugins probe's report for ``env`` (cached per env content)."""
    key = (str(env.python), env.lock_hash)
    if key not in _PROBES:
        out = proc.check_output(
            [str(env.python), str(probes.script("plugins"))],
            env=proc.clean_environ(),
            timeout=120,
            what=f"plugins probe in leg {env.spec.name}",
        )
        try:
            _PROBES[key] = json.loads(out)
        except ValueError as exc:
            raise ProcessError(
                f"the plugins probe printed no JSON in leg {env.spec.name}: {out[-300:]!r}"
            ) from exc
    return _PROBES[key]


#: Names the distributions whose declared requirements a leg is checked against
#: (comma-separated; default :data:`declared.RELEASES`), e.g. to add a framework's pins.
DECLARED_VAR = "VLLMDIAG_DECLARED"


def releases_checked() -> tuple[str, ...]:
    named = [n.strip() for n in os.environ.get(DECLARED_VAR, "").split(",") if n.strip()]
    return tuple(named) or declared.RELEASES


def failed_leg(leg: str, path: str, error: VllmdiagError) -> DoctorReport:
    """A ``path:`` leg that could not be used, as a report: one finding saying why."""
    return DoctorReport(
        leg=leg,
        path=path,
        findings=(
            Finding(
                WARNING,
                "leg-failed",
                f"the path: leg could not be used, so none of its cells ran: {error.message}",
                hint=error.hint or "check that the path is a Python environment on this node",
            ),
        ),
    )


def requires(env: Env, releases: Sequence[str] | None = None) -> dict[str, Any]:
    """What ``releases`` declare they need in ``env``, and what of it is installed there
    (the ``requires`` probe, run in the leg's own python)."""
    out = proc.check_output(
        [str(env.python), str(probes.script("requires")), *(releases or releases_checked())],
        env=proc.clean_environ(),
        timeout=120,
        what=f"requirements probe in leg {env.spec.name}",
    )
    try:
        data: dict[str, Any] = json.loads(out)
    except ValueError as exc:
        raise ProcessError(
            f"the requirements probe printed no JSON in leg {env.spec.name}: {out[-300:]!r}"
        ) from exc
    return data


def known_env_vars(env: Env) -> frozenset[str] | None:
    """The environment variable names this leg's vLLM knows; None without vllm."""
    names = probe(env).get("known_env_vars")
    return frozenset(names) if names is not None else None


def compute_apps() -> tuple[list[tuple[int, str, str]] | None, str | None]:
    """Processes on the GPUs, or (None, why not checked)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "nvidia-smi not found: other GPU processes not checked"
    done = proc.run(
        [smi, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
        capture=True,
        timeout=30,
    )
    if not done.ok:
        return None, f"nvidia-smi failed ({(done.stderr or done.stdout).strip()[-200:]})"
    return checks.parse_compute_apps(done.stdout), None


def doctor(
    env: Env, run_env: Mapping[str, str] | None = None, *, check_gpu: bool = True
) -> DoctorReport:
    """Check a leg for what would make its numbers unclean; see :mod:`checks`."""
    info = probe(env)
    findings = [
        *checks.plugins(info),
        *checks.console_script(info),
        *checks.flashinfer(info),
        *checks.known_vars(info),
        *checks.logging_hazard(run_env or {}),
        *declared.declared(requires(env)),
    ]
    if check_gpu:
        apps, why = compute_apps()
        findings += checks.gpu_processes(apps, own_pids=(os.getpid(),), error=why)
    else:
        findings.append(Finding(SKIPPED, "gpu-processes", "other GPU processes: not checked"))
    findings += leftover_cells()
    known = info.get("known_env_vars")
    return DoctorReport(
        leg=env.spec.name,
        path=str(env.path),
        findings=tuple(findings),
        vllm=info.get("vllm"),
        known_env_vars=len(known) if known is not None else None,
    )


def leftover_cells() -> list[Finding]:
    """Cell processes of this node that no running job owns (none while this process holds
    the node lock: it ended them when it took the lock, and those left are its own)."""
    holder = holder_if_held(node_lock_path())
    if holder == str(os.getpid()):
        return []
    found = stray.strays()
    left = [(s.pid, s.cell or s.tag) for s in found if not s.owned]
    running = [(s.pid, s.cell or s.tag) for s in found if s.owned]
    return checks.leftover_cells(left, running, holder)


def require_clean(report: DoctorReport, *, allow_contaminated: bool = False) -> None:
    """Stop before a matrix runs on a contaminated leg, unless the user overrode it.

    Either way the caller records the report in the run's manifest."""
    if report.contaminated and not allow_contaminated:
        raise EnvError(
            "the leg is contaminated: " + "; ".join(report.reasons()),
            where=f"leg {report.leg} ({report.path})",
            hint="fix the leg (vllmdiag doctor shows how), or pass --allow-contaminated to "
            "run anyway (the finding is recorded in the manifest)",
        )
