"""The Python a version's wheels are picked for and its probe envs are built with: an
X.Y that uv finds here, or the path of an interpreter."""

from __future__ import annotations

import sys

from vllmdiag.errors import EnvError, ProcessError
from vllmdiag.services import proc
from vllmdiag.services.envs.spec import default_python
from vllmdiag.services.envs.uvtool import uv


def check_python(python: str) -> tuple[str, str]:
    """``(X.Y, request)`` for ``--python``: an X.Y that uv finds here, or the path of an
    interpreter (for one uv cannot discover, e.g. behind pyenv shims). A clear error if
    there is none. The interpreter running vllmdiag needs no search: it is given by path."""
    if python == default_python():
        return python, sys.executable
    if "/" in python:
        try:
            done = proc.run(
                [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture=True,
                timeout=60,
            )
        except ProcessError:
            done = None
        if done is None or not done.ok:
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
