"""The content-addressed env cache.

``<cache>/envs/<key>/`` holds one venv per :class:`LegSpec` identity. It is reused only
when its marker (written atomically, last, after install, health check and pin check all
passed) and a fresh health check agree; anything else is wiped and rebuilt. For every env
we record ``uv pip freeze`` and the runtime stack; its lock hash is the hash of the
freeze, so two cells compare on what was installed, not on what was asked for.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from vllmdiag import codec, probes
from vllmdiag.errors import EnvError, PinNotHeld, ProcessError
from vllmdiag.events import Observer, ignore
from vllmdiag.model.stack import EnvRecord, NodeGpus, StackInfo
from vllmdiag.services import atomic, proc, redact
from vllmdiag.services.envs.gpu import gpu_info
from vllmdiag.services.envs.spec import LegSpec
from vllmdiag.services.envs.uvtool import append_log, index_environ, resolver_message, uv, uv_run
from vllmdiag.services.envs.verify import (
    Damage,
    freeze_versions,
    inspect,
    pin_problems,
    read_marker,
)
from vllmdiag.services.locks import file_lock
from vllmdiag.services.paths import cache_root

MARKER = ".vllmdiag-env.json"
MARKER_SCHEMA = 1


class EnvState(str, Enum):
    BUILDING = "building"
    REUSED = "reused"
    DAMAGED = "damaged"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True)
class EnvEvent:
    """Progress of a leg's env (``detail``: the path, the requirements, why it is being
    rebuilt, the build time, or uv's account of a failure)."""

    leg: str
    kind: EnvState
    detail: str = ""


@dataclass(frozen=True)
class Env:
    """A ready environment: where it is and what it holds."""

    spec: LegSpec
    path: Path
    python: Path
    freeze: tuple[str, ...]
    stack: StackInfo
    lock_hash: str
    reused: bool = False
    build_s: float = 0.0
    gpu: NodeGpus = field(default_factory=NodeGpus)

    @property
    def bin_dir(self) -> Path:
        return self.python.parent

    def installed(self) -> dict[str, str]:
        """Distribution name (canonical) → version, from the freeze."""
        return freeze_versions(self.freeze)

    def child_environ(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` with this env first on PATH and ``VIRTUAL_ENV`` set."""
        env = dict(base)
        env["PATH"] = f"{self.bin_dir}{':' + env['PATH'] if env.get('PATH') else ''}"
        env["VIRTUAL_ENV"] = str(self.path)
        return env

    def record(self) -> EnvRecord:
        return EnvRecord(
            leg=self.spec.name,
            key=self.spec.key(),
            path=str(self.path),
            python=str(self.python),
            requirements=tuple(self.spec.requirements),
            pins=tuple(self.spec.pins),
            exclude_newer=self.spec.exclude_newer,
            lock_hash=self.lock_hash,
            stack=self.stack,
            gpu=self.gpu,
            freeze=self.freeze,
            reused=self.reused,
            build_s=round(self.build_s, 3),
        )


class EnvCache:
    """Builds and hands out environments under ``root`` (default: the user cache)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_root()) / "envs"

    def verified_for(self, spec: LegSpec) -> Path:
        """Where the identities of the leg's files whose content was verified are kept
        (outside the env: an existing environment is never written to)."""
        if spec.existing is not None:
            name = hashlib.sha256(str(_existing_prefix(spec.existing)).encode()).hexdigest()[:16]
            return self.root.parent / "verified" / f"existing-{name}.json"
        return self.root.parent / "verified" / f"{spec.key()}.json"

    def path_for(self, spec: LegSpec) -> Path:
        if spec.existing is not None:
            return _existing_prefix(spec.existing)
        return self.root / spec.key()

    def built_python(self, spec: LegSpec) -> Path | None:
        """The interpreter cells of ``spec`` run with: an existing environment's own (its
        ``bin/python``, or the file given), or the one a built uv leg's marker records;
        None if the uv leg is not built. Cheap: nothing is started or verified."""
        if spec.existing is not None:
            return _existing_python(spec.existing)
        data, _ = read_marker(self.path_for(spec) / MARKER, schema=MARKER_SCHEMA, key=spec.key())
        return Path(data["python"]) if data is not None else None

    def lookup(self, spec: LegSpec) -> Env | None:
        """The env for ``spec`` if it is built and healthy; never builds."""
        if spec.existing is not None:
            return self._adopt(spec)
        return self._reuse(spec, self.path_for(spec))[0]

    def ensure(
        self, spec: LegSpec, *, observer: Observer[EnvEvent] = ignore, log: Path | None = None
    ) -> Env:
        """The env for ``spec``, built if needed. Raises :class:`EnvError` on failure."""
        notify = observer
        if spec.existing is not None:
            env = self._adopt(spec)
            notify(EnvEvent(spec.name, EnvState.REUSED, str(env.path)))
            return env
        path = self.path_for(spec)
        with file_lock(self.root / f"{path.name}.lock", what=f"env {spec.name}"):
            reused, why = self._reuse(spec, path)
            if reused is not None:
                notify(EnvEvent(spec.name, EnvState.REUSED, str(path)))
                return reused
            if why.text:
                notify(EnvEvent(spec.name, EnvState.DAMAGED, f"{why.text}: rebuilding"))
            notify(EnvEvent(spec.name, EnvState.BUILDING, " ".join(spec.requirements)))
            try:
                env = self._build(spec, path, log, refresh=why.dists)
            except EnvError as exc:
                notify(EnvEvent(spec.name, EnvState.FAILED, exc.message))
                raise
            notify(EnvEvent(spec.name, EnvState.READY, f"{env.build_s:.1f}s"))
            return env

    def _reuse(self, spec: LegSpec, path: Path) -> tuple[Env | None, Damage]:
        """The cached env if it proves itself, else None and why not ("" if not built)."""
        data, why = read_marker(path / MARKER, schema=MARKER_SCHEMA, key=spec.key())
        if data is None:
            return None, Damage(why)
        python = Path(data["python"])
        if not _healthy(python):
            return None, Damage("its python does not start")
        broken = inspect(python, spec.requirements, self.verified_for(spec))
        if broken.text:
            return None, broken
        env = Env(
            spec=spec,
            path=path,
            python=python,
            freeze=tuple(data["freeze"]),
            stack=StackInfo.from_probe(data["stack"]),
            lock_hash=data["lock_hash"],
            reused=True,
            gpu=gpu_info(),
        )
        return env, Damage()

    def _build(
        self, spec: LegSpec, path: Path, log: Path | None, refresh: tuple[str, ...] = ()
    ) -> Env:
        """Build the leg: files copied out of uv's cache, never hardlinked (an edit of a
        leg's file would change the cache and every leg that shares it), then verified
        against RECORD. ``refresh``: distributions found damaged, fetched again (uv's cache
        may hold the damaged file); one rebuild so, if the first is damaged too."""
        env = self._build_once(spec, path, log, refresh)
        broken = inspect(env.python, spec.requirements, self.verified_for(spec))
        if broken.text and not refresh:
            env = self._build_once(spec, path, log, broken.dists)
            broken = inspect(env.python, spec.requirements, self.verified_for(spec))
        if broken.text:
            shutil.rmtree(path, ignore_errors=True)
            raise EnvError(
                f"the new environment is damaged: {broken.text}",
                where=f"leg {spec.name}",
                hint="uv's cache holds a damaged copy: 'uv cache clean "
                + " ".join(broken.dists)
                + "', then run again",
            )
        self._seal(spec, path, env)
        return env

    def _build_once(
        self, spec: LegSpec, path: Path, log: Path | None, refresh: tuple[str, ...]
    ) -> Env:
        start = time.monotonic()
        if path.exists():
            shutil.rmtree(path)
        python = path / "bin" / "python"
        where = f"leg {spec.name}"
        try:
            uv(
                "venv",
                "--quiet",
                "--python",
                spec.python_request,
                path,
                what=f"uv venv --python {spec.python_request}",
            )
        except ProcessError as exc:
            raise EnvError(
                f"cannot create a Python {spec.python_request} environment: {exc.message}",
                where=where,
                hint="install that Python on this machine (uv does not download one here) "
                "or set the leg's 'python' to one that exists",
            ) from None
        args: list[str | Path] = ["pip", "install", "--python", python, "--link-mode", "copy"]
        for name in refresh:
            args += ["--refresh-package", name]
        if spec.exclude_newer:
            args += ["--exclude-newer", spec.exclude_newer]
        args += list(spec.requirements)
        if spec.requirements:
            indexes = index_environ(spec.index_url, spec.extra_index_urls)
            done = uv_run(*args, extra_env=indexes)
            if log is not None:
                append_log(log, done, indexes)
            if not done.ok:
                shutil.rmtree(path, ignore_errors=True)
                raise EnvError(
                    "install failed: " + resolver_message(done),
                    where=where,
                    hint="the requirements do not resolve or build here; see the message "
                    "above (an --exclude-newer date or index may exclude the version)",
                )
        if not _healthy(python):
            raise EnvError("the new environment's python does not start", where=where)
        return self._describe(spec, path, python, reused=False, build_s=time.monotonic() - start)

    def _seal(self, spec: LegSpec, path: Path, env: Env) -> None:
        """Check the pins and write the marker: last, once the leg passed every check."""
        check_pins(env)
        record = codec.dump(env.record())
        atomic.write_json(
            path / MARKER,
            redact.data({**record, "schema": MARKER_SCHEMA, "key": spec.key(), "created": _now()}),
        )

    def _adopt(self, spec: LegSpec) -> Env:
        assert spec.existing is not None
        python = _existing_python(spec.existing)
        if not _healthy(python):
            raise EnvError(
                f"no working python at {spec.existing}",
                where=f"leg {spec.name}",
                hint="give the path of a virtual environment or of its bin/python",
            )
        env = self._describe(spec, _existing_prefix(spec.existing), python, reused=True)
        check_pins(env)
        # An environment vllmdiag did not build is the user's (or a machine image's, which
        # may patch a file such as certifi's CA bundle): a missing file makes it unusable, a
        # file whose content differs from its RECORD does not.
        found = inspect(python, spec.requirements, self.verified_for(spec))
        broken = "" if found.altered_only else found.text
        if broken:
            raise EnvError(
                f"the environment is damaged: {broken}",
                where=f"leg {spec.name} ({spec.existing})",
                hint="reinstall what is listed (vllmdiag never modifies an existing "
                "environment), or let vllmdiag build the leg from requirements",
            )
        return env

    def _describe(
        self, spec: LegSpec, path: Path, python: Path, *, reused: bool, build_s: float = 0.0
    ) -> Env:
        freeze = tuple(
            line
            for line in uv("pip", "freeze", "--python", python, what="uv pip freeze").splitlines()
            if line.strip()
        )
        stack = StackInfo.from_probe(
            json.loads(
                proc.check_output([str(python), str(probes.script("stack"))], what="stack probe")
            )
        )
        lock_hash = hashlib.sha256("\n".join(sorted(freeze)).encode()).hexdigest()[:16]
        return Env(spec, path, python, freeze, stack, lock_hash, reused, build_s, gpu_info())


def check_pins(env: Env) -> None:
    """Every requirement of the leg must hold in what was installed; else EnvError."""
    problems = pin_problems(env.spec.requirements, env.installed())
    if problems:
        raise PinNotHeld(
            tuple(problems),
            where=f"leg {env.spec.name} ({env.path})",
            hint="another requirement forces a different version; this cell cannot test "
            "the pin, so it is an error, not a result",
        )


def _healthy(python: Path) -> bool:
    if not python.exists():
        return False
    done = proc.run([str(python), "-c", "import sys, json"], capture=True, timeout=60)
    return done.ok


def _existing_python(path: Path) -> Path:
    if path.is_dir():
        for cand in (path / "bin" / "python", path / "bin" / "python3"):
            if cand.exists():
                return cand
        return path / "bin" / "python"
    return path


def _existing_prefix(path: Path) -> Path:
    python = _existing_python(path)
    return python.parent.parent if python.parent.name == "bin" else python.parent


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
