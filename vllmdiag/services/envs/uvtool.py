"""Calls to uv: the binary shipped by the ``uv`` package, run through
:mod:`vllmdiag.services.proc`."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from functools import lru_cache
from pathlib import Path

from vllmdiag.errors import EnvError
from vllmdiag.services import proc, redact


@lru_cache(maxsize=1)
def uv_bin() -> str:
    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise EnvError("uv is not installed", hint="pip install uv (vllmdiag depends on it)")


def uv_environ() -> dict[str, str]:
    """Our environment for uv: the user's index and cache settings stay; Python downloads
    are off (only package registries may be reachable)."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env.setdefault("UV_NO_PROGRESS", "1")
    return env


def uv(*args: str | Path, timeout: float = 1800.0, what: str | None = None) -> str:
    return proc.check_output(
        [uv_bin(), *map(str, args)], env=uv_environ(), timeout=timeout, what=what
    )


def uv_run(
    *args: str | Path, timeout: float = 1800.0, extra_env: dict[str, str] | None = None
) -> proc.Completed:
    """Run uv; ``extra_env`` carries what must not show on a command line (an index URL
    with a password would be in every process listing)."""
    env = uv_environ()
    if extra_env and "UV_DEFAULT_INDEX" in extra_env:
        # the leg's index wins over the user's, as --default-index did
        for name in ("UV_INDEX_URL", "PIP_INDEX_URL"):
            env.pop(name, None)
    env.update(extra_env or {})
    return proc.run([uv_bin(), *map(str, args)], env=env, timeout=timeout, capture=True)


def index_environ(index_url: str | None, extra_index_urls: tuple[str, ...]) -> dict[str, str]:
    """A leg's indexes as uv's own variables, never as arguments."""
    env: dict[str, str] = {}
    if index_url:
        env["UV_DEFAULT_INDEX"] = index_url
    if extra_index_urls:
        env["UV_INDEX"] = " ".join(extra_index_urls)
    return env


#: uv's progress lines, which say nothing of why a build failed.
_CHATTER = re.compile(
    r"^(?:Using (?:Python|CPython) .* (?:environment|interpreter) at|Resolved \d|Prepared \d"
    r"|Installed \d|Uninstalled \d|Audited \d|Downloading |Downloaded |Building |Built "
    r"|Creating virtual environment|Activate with|Bytecode compiled| [+-~] )"
)


def resolver_message(done: proc.Completed) -> str:
    """uv's own account of a failure: its error lines first, progress chatter dropped
    (so a one-line view of it shows the cause, not "Using Python ... environment at")."""
    text = done.stderr.strip() or done.stdout.strip()
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip() and not _CHATTER.match(ln)]
    if not lines:
        return text[-3000:] or f"uv exited {done.rc}"
    first = next((i for i, ln in enumerate(lines) if re.match(r"\s*(?:error|×)", ln)), 0)
    return "\n".join(lines[first:])[-3000:]


def append_log(log: Path, done: proc.Completed, env: dict[str, str] | None = None) -> None:
    """Append a uv call to a leg's log: the variables it was given (redacted), the command,
    its output and exit status."""
    given = "".join(f"{k}={shlex.quote(v)} " for k, v in sorted((env or {}).items()))
    command = shlex.join(redact.argv(done.argv))
    text = f"$ {given}{command}\n{done.stdout}{done.stderr}\n[rc={done.rc}]\n"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(redact.text(text))
    except OSError as exc:
        raise EnvError(
            f"cannot write the env log: {exc.strerror}",
            where=str(log),
            hint="free some space (or fix permissions) where the run directory is",
        ) from None
