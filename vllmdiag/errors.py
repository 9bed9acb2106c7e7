"""The one exception type a user's mistake (or a broken setup) raises.

The CLI turns a :class:`VllmdiagError` into a one-line message and exit code 1; any
other exception is a bug in vllmdiag and exits 3 with a traceback.
"""

from __future__ import annotations


class VllmdiagError(Exception):
    """An error the user can act on: what was wrong, where, and what to do next."""

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def render(self) -> str:
        head = f"{self.where}: {self.message}" if self.where else self.message
        return f"{head}\n  hint: {self.hint}" if self.hint else head

    def __str__(self) -> str:
        return self.render()


class ConfigError(VllmdiagError):
    """A recipe, arm or catalogue file that does not validate."""


class EnvError(VllmdiagError):
    """An environment (leg) that could not be built, verified or found."""


class PinNotHeld(EnvError):
    """A leg's pin that the resolver did not honour (``problems`` says which and how): a
    cell on it cannot test the pin, so it is an error, and the arm is inert."""

    def __init__(
        self,
        problems: tuple[str, ...],
        *,
        where: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__("a pin did not hold: " + "; ".join(problems), where=where, hint=hint)
        self.problems = problems


class ProcessError(VllmdiagError):
    """A helper command vllmdiag itself needed (uv, a probe) failed."""


class RunDirError(VllmdiagError):
    """A run directory that cannot be created, read or written (a file in the way, no
    permission, a full disk). What had finished in it is intact; the run can resume."""
