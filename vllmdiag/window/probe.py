"""One import probe: install ``PKG==V`` (with its normal dependencies) into a fresh,
isolated env and ask that env's python whether ``MODULE.ATTR`` exists.

Probe envs live under a scratch root and are removed after the probe: what is kept is
the stored result (see :mod:`vllmdiag.window.store`), not 300 MB per version. uv's
download cache is shared, so a second install of the same wheel is a hard-link away.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from vllmdiag import probes, proc
from vllmdiag.envs.cache import EnvCache
from vllmdiag.envs.spec import LegSpec, default_python
from vllmdiag.envs.uvtool import uv
from vllmdiag.errors import EnvError, ProcessError
from vllmdiag.window.model import ProbeResult, Status

IMPORT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class ProbeSpec:
    """What to probe, apart from the version."""

    requirement: str  # the package with its extras, e.g. ``nvidia-cutlass-dsl[cu13]``
    symbol: str  # MODULE.ATTR
    python: str  # X.Y
    exclude_newer: str | None = None
    index_url: str | None = None
    interpreter: str | None = None  # what uv gets, when not X.Y (a path)

    def leg(self, version: str) -> LegSpec:
        return LegSpec(
            name=f"probe {self.requirement}=={version}",
            requirements=(f"{self.requirement}=={version}",),
            python=self.interpreter or self.python,
            index_url=self.index_url,
            exclude_newer=self.exclude_newer,
        )


def check_python(python: str) -> tuple[str, str]:
    """``(X.Y, request)`` for ``--python``: an X.Y that uv finds here, or the path of an
    interpreter (for one uv cannot discover, e.g. behind pyenv shims). A clear error if
    there is none. The interpreter running vllmdiag needs no search: it is given by path."""
    if python == default_python():
        return python, sys.executable
    if "/" in python:
        done = proc.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture=True,
            timeout=60,
        )
        if not done.ok:
            raise EnvError(
                f"{python} does not run",
                where="--python",
                hint="give X.Y or the path of a working python",
            )
        return done.stdout.strip(), python
    try:
        uv("python", "find", python, what=f"uv python find {python}")
    except ProcessError as exc:
        raise EnvError(
            f"no Python {python} that uv can find on this machine",
            where="--python",
            hint="install it (uv does not download Pythons here), put its bin directory on "
            "PATH, or pass the interpreter's path (--python /path/to/bin/python3.X); "
            "uv said: " + exc.message.strip().splitlines()[-1][:300],
        ) from None
    return python, python


def probe_one(spec: ProbeSpec, version: str, scratch: Path) -> ProbeResult:
    """Install, import, report. Never raises for a version's own failure: that is data."""
    start = time.monotonic()
    cache = EnvCache(root=Path(tempfile.mkdtemp(prefix="probe-", dir=scratch)))
    try:
        try:
            env = cache.ensure(spec.leg(version))
        except (EnvError, ProcessError) as exc:  # resolver, build or broken-env failures
            return ProbeResult(
                version, Status.INSTALL_FAILED, _short(exc.message), time.monotonic() - start
            )
        done = proc.run(
            [str(env.python), "-I", str(probes.script("symbol")), spec.symbol],
            env=proc.clean_environ(),
            cwd=cache.root,
            capture=True,
            timeout=IMPORT_TIMEOUT_S,
        )
        return _parse(version, done, time.monotonic() - start)
    finally:
        shutil.rmtree(cache.root.parent, ignore_errors=True)


def _parse(version: str, done: proc.Completed, elapsed: float) -> ProbeResult:
    if done.interrupted:
        raise KeyboardInterrupt
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.timed_out or not lines:
        why = "timed out" if done.timed_out else f"probe exited {done.rc}"
        tail = (done.stderr.strip() or done.stdout.strip())[-1500:]
        return ProbeResult(version, Status.IMPORT_ERROR, f"{why}: {tail}".strip(), elapsed)
    data = json.loads(lines[-1])
    return ProbeResult(version, Status(data["status"]), str(data.get("detail", "")), elapsed)


def _short(message: str) -> str:
    return message if len(message) <= 3000 else "…" + message[-3000:]


Observer = Callable[[str, ProbeResult | None], None]


def probe_many(
    spec: ProbeSpec,
    versions: list[str],
    *,
    jobs: int = 1,
    observer: Observer | None = None,
) -> dict[str, ProbeResult]:
    """Probe ``versions`` with up to ``jobs`` at a time; ``observer(version, None)`` when
    one starts and ``observer(version, result)`` when it ends."""
    notify = observer or (lambda _v, _r: None)
    scratch = Path(tempfile.mkdtemp(prefix="vllmdiag-window-"))

    def one(version: str) -> ProbeResult:
        notify(version, None)
        result = probe_one(spec, version, scratch)
        notify(version, result)
        return result

    try:
        if jobs <= 1 or len(versions) <= 1:
            return {v: one(v) for v in versions}
        with ThreadPoolExecutor(max_workers=min(jobs, len(versions))) as pool:
            return dict(zip(versions, pool.map(one, versions), strict=True))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
