"""One import probe: install ``PKG==V`` (with its normal dependencies) into a fresh,
isolated env and ask that env's python whether ``MODULE.ATTR`` exists.

A probe env is three commands (``uv venv``, ``uv pip install``, the probe script), built
under vllmdiag's cache directory (beside uv's own cache as a rule, so uv hard-links from
it instead of copying) and removed afterwards: what is kept is the stored result (see
:mod:`vllmdiag.jobs.window.store`), not 300 MB per version. The index reaches uv through its
environment (``UV_DEFAULT_INDEX``), never its command line, so its credentials appear in
no process listing; uv's messages are redacted before they are kept.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from vllmdiag import probes
from vllmdiag.events import Observer, ignore
from vllmdiag.jobs.window.events import ProbeEvent, ProbeFinished, ProbeStarted
from vllmdiag.jobs.window.probe_result import ProbeResult, ProbeStatus
from vllmdiag.services import proc, redact
from vllmdiag.services.envs.uvtool import uv_bin
from vllmdiag.services.paths import cache_root
from vllmdiag.services.pkgindex.config import uv_env

IMPORT_TIMEOUT_S = 600.0
INSTALL_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class ProbeSpec:
    """What to probe, apart from the version."""

    requirement: str  # the package with its extras, e.g. ``nvidia-cutlass-dsl[cu13]``
    symbol: str  # MODULE.ATTR
    python: str  # X.Y
    exclude_newer: str | None = None
    index_url: str | None = None  # credentials included: never shown, never stored
    interpreter: str | None = None  # what uv gets, when not X.Y (a path)


def probe_one(spec: ProbeSpec, version: str, scratch: Path) -> ProbeResult:
    """Install, import, report. Never raises for a version's own failure: that is data."""
    start = time.monotonic()
    env_dir = Path(tempfile.mkdtemp(prefix="probe-", dir=scratch))
    try:
        env = uv_env(spec.index_url)
        python = env_dir / "bin" / "python"
        steps: list[tuple[str, list[str]]] = [
            ("uv venv", ["venv", "--quiet", "--python", spec.interpreter or spec.python, "."]),
            (
                "install",
                ["pip", "install", "--quiet", "--python", str(python)]
                + (["--exclude-newer", spec.exclude_newer] if spec.exclude_newer else [])
                + [f"{spec.requirement}=={version}"],
            ),
        ]
        for what, args in steps:
            done = proc.run(
                [uv_bin(), *args], env=env, cwd=env_dir, capture=True, timeout=INSTALL_TIMEOUT_S
            )
            if done.interrupted:
                raise KeyboardInterrupt
            if not done.ok:
                text = (done.stderr.strip() or done.stdout.strip()) or f"{what} exited {done.rc}"
                why = "timed out" if done.timed_out else text
                return ProbeResult(
                    version,
                    ProbeStatus.INSTALL_FAILED,
                    f"install failed: {_short(redact.text(why))}",
                    _since(start),
                )
        done = proc.run(
            # -B: the env is thrown away, writing its bytecode would only cost time.
            [str(python), "-I", "-B", str(probes.script("symbol")), spec.symbol],
            env=proc.clean_environ(),
            cwd=env_dir,
            capture=True,
            timeout=IMPORT_TIMEOUT_S,
        )
        return _parse(version, done, _since(start))
    finally:
        shutil.rmtree(env_dir, ignore_errors=True)


def _parse(version: str, done: proc.Completed, elapsed: float) -> ProbeResult:
    if done.interrupted:
        raise KeyboardInterrupt
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.timed_out or not lines:
        why = "timed out" if done.timed_out else f"probe exited {done.rc}"
        tail = (done.stderr.strip() or done.stdout.strip())[-1500:]
        text = redact.text(f"{why}: {tail}".strip())
        return ProbeResult(version, ProbeStatus.IMPORT_ERROR, text, elapsed)
    try:
        data = json.loads(lines[-1])
        status = ProbeStatus(data["status"])
    except (ValueError, KeyError, TypeError):
        said = redact.text(lines[-1][:300])
        return ProbeResult(
            version, ProbeStatus.IMPORT_ERROR, f"unreadable probe answer: {said}", elapsed
        )
    return ProbeResult(version, status, str(data.get("detail", "")), elapsed)


def _since(start: float) -> float:
    return round(time.monotonic() - start, 3)


def _short(message: str) -> str:
    return message if len(message) <= 3000 else "…" + message[-3000:]


class Prober:
    """Import probes run ``jobs`` at a time, each started once: :meth:`start` may be
    called early (while the static read still runs) and again later for free.
    ``observer`` gets a :class:`ProbeStarted` when one starts and a :class:`ProbeFinished`
    when it ends (from a worker thread). Use as a context manager: leaving waits for
    probes in flight and removes the scratch directory."""

    def __init__(
        self, spec: ProbeSpec, *, jobs: int = 1, observer: Observer[ProbeEvent] = ignore
    ) -> None:
        self.spec = spec
        self._notify = observer
        base = cache_root() / "scratch"
        base.mkdir(parents=True, exist_ok=True)
        self._scratch = Path(tempfile.mkdtemp(prefix="window-", dir=base))
        self._pool = ThreadPoolExecutor(max_workers=max(1, jobs))
        self._futures: dict[str, Future[ProbeResult]] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> Prober:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self._scratch, ignore_errors=True)

    @property
    def started(self) -> int:
        return len(self._futures)

    def start(self, version: str) -> Future[ProbeResult]:
        with self._lock:
            fut = self._futures.get(version)
            if fut is None:
                fut = self._futures[version] = self._pool.submit(self._one, version)
            return fut

    def results(self, versions: list[str]) -> dict[str, ProbeResult]:
        futures = {v: self.start(v) for v in versions}
        return {v: f.result() for v, f in futures.items()}

    def _one(self, version: str) -> ProbeResult:
        self._notify(ProbeStarted(version))
        result = probe_one(self.spec, version, self._scratch)
        self._notify(ProbeFinished(result))
        return result
