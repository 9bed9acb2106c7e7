"""What a consumer of the package declares, what a fresh resolve of it picks today, and
who else in that resolve constrains the package: read from wheel metadata files and
``uv pip compile`` (no wheel is downloaded)."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.window.results import Constraint
from vllmdiag.services import proc, redact
from vllmdiag.services.envs.uvtool import uv_bin
from vllmdiag.services.pkgindex import simple_api
from vllmdiag.services.pkgindex.config import uv_env
from vllmdiag.services.pkgindex.simple_api import IndexFile
from vllmdiag.services.pkgindex.versions import candidates, file_version, nearby, parse_date


@dataclass(frozen=True)
class Resolve:
    """A fresh ``uv pip compile``: pins by canonical name and who pulled each in."""

    pins: dict[str, str]
    via: dict[str, tuple[str, ...]]
    error: str | None = None


def requirements_on(metadata_text: str, package: str, python: str) -> list[Requirement]:
    """The consumer's ``Requires-Dist`` entries on ``package`` that apply on ``python``
    (markers evaluated with no extra)."""
    want = canonicalize_name(package)
    env = {k: str(v) for k, v in default_environment().items()}
    env.update(python_version=python, python_full_version=f"{python}.0", extra="")
    out = []
    for line in simple_api.requires_dist(metadata_text):
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != want:
            continue
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        out.append(req)
    return out


def declared_specifier(reqs: list[Requirement]) -> str | None:
    if not reqs:
        return None
    return ",".join(_ordered(str(r.specifier)) for r in reqs if str(r.specifier)) or ""


def _ordered(spec: str) -> str:
    """Lower bounds first, as people write them (``>=4.4.0.dev1,<5``)."""
    parts = [p for p in spec.split(",") if p]
    return ",".join(sorted(parts, key=lambda p: (not p.startswith(">"), p)))


def release_metadata(
    name: str, version: str, python: str, index_url: str | None, *, where: str | None = None
) -> str:
    """The core metadata of ``name==version``, from one of its wheels."""
    proj = simple_api.project(name, index_url, where=where)
    wanted = Version(version)
    usable = [f for f in proj.files if not f.yanked and file_version(f) == wanted]
    files = [f for f in usable if f.is_wheel]
    if not usable:
        raise VllmdiagError(
            f"{name} has no release {version} on the index",
            where=where,
            hint=f"releases of {name} near it: {nearby(proj.files, wanted)}",
        )
    if not files:
        raise VllmdiagError(
            f"{name}=={version} has no wheel on the index to read metadata from",
            where=where,
            hint="the consumer check reads Requires-Dist from a wheel's .metadata file",
        )
    files.sort(key=lambda f: (not f.has_metadata, "x86_64" not in f.filename))
    return simple_api.metadata(files[0])


def consumer_version(
    req: Requirement, python: str, index_url: str | None, exclude_newer: str | None
) -> str:
    """The consumer release to read: its ``==`` pin, else the newest one it admits."""
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
    if pinned and "*" not in pinned[0]:
        return pinned[0]
    proj = simple_api.project(req.name, index_url, where="--consumer")
    when = parse_date(exclude_newer) if exclude_newer else None
    found = candidates(proj.files, python=python, spec=req.specifier, exclude_newer=when)
    if not found:
        raise VllmdiagError(
            f"no release of {req.name} matches {req.specifier or '(any)'} for Python {python}",
            where="--consumer",
            hint=f"releases of {req.name} on the index range "
            f"{_span(proj.files)}; widen the range or pin one",
        )
    return str(found[-1].version)


def _span(files: Sequence[IndexFile]) -> str:
    found = sorted({v for f in files if (v := file_version(f)) is not None})
    return f"{found[0]} … {found[-1]}" if found else "(none)"


def fresh_resolve(
    requirement: str, python: str, *, exclude_newer: str | None, index_url: str | None
) -> Resolve:
    """``uv pip compile`` of the consumer alone, annotated, for ``python``. The index goes
    to uv through its environment, so no password is on a command line."""
    with tempfile.TemporaryDirectory(prefix="vllmdiag-resolve-") as tmp:
        req_in = Path(tmp) / "requirements.in"
        req_in.write_text(requirement + "\n", encoding="utf-8")
        args = [
            uv_bin(),
            "pip",
            "compile",
            str(req_in),
            "--python-version",
            python,
            "--no-header",
            "--quiet",
        ]
        if exclude_newer:
            args += ["--exclude-newer", exclude_newer]
        done = proc.run(args, env=uv_env(index_url), capture=True, timeout=900.0)
    if done.interrupted:
        raise KeyboardInterrupt
    if not done.ok:
        text = redact.text((done.stderr.strip() or done.stdout.strip())[-2000:])
        return Resolve({}, {}, text or f"uv pip compile exited {done.rc}")
    return parse_compile(done.stdout)


_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)")


def parse_compile(text: str) -> Resolve:
    """Pins and ``# via`` annotations from ``uv pip compile`` output."""
    pins: dict[str, str] = {}
    via: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _PIN.match(line)
        if m:
            current = canonicalize_name(m.group(1))
            pins[current] = m.group(3)
            via[current] = []
            continue
        stripped = line.strip()
        if current is None or not stripped.startswith("#"):
            continue
        body = stripped.lstrip("#").strip()
        if body.startswith("via"):
            body = body[3:].strip()
        if body and not body.startswith(("-r", "-c")):
            via[current].append(canonicalize_name(body.split()[0]))
    return Resolve(pins, {k: tuple(v) for k, v in via.items()})


def constraints(
    resolve: Resolve, package: str, python: str, index_url: str | None
) -> list[Constraint]:
    """How each package that pulled ``package`` into the resolve constrains it."""
    name = canonicalize_name(package)
    out = []
    for parent in resolve.via.get(name, ()):
        version = resolve.pins.get(parent)
        if version is None:
            continue
        try:
            reqs = requirements_on(
                release_metadata(parent, version, python, index_url), package, python
            )
        except VllmdiagError:
            continue
        spec = declared_specifier(reqs)
        if spec is not None:
            out.append(Constraint(parent, version, spec))
    return out
