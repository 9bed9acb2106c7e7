"""pip's resolver refusing an install, and whose the conflict is (pure).

pip says which requirements it could not satisfy together::

    ERROR: Cannot install vllm because these package versions have conflicting dependencies.

    The conflict is caused by:
        outlines 0.0.46 depends on pyairports
        outlines 0.0.45 depends on pyairports
        The user requested torch==2.1.0

or, after an install it went through with, which installed packages now break what
others declare::

    ERROR: pip's dependency resolver does not currently take into account all the
    packages that are installed. This behaviour is the source of the following
    dependency conflicts.
    vllm 0.2.1.post1 requires torch==2.0.1, but you have torch 2.3.0 which is incompatible.

Every release of one package that pip could pick depending on a requirement that cannot
be had (a package delisted from the index) is that package's defect; requirements the
user asked for that conflict with what the packages declare, and installed packages that
break each other's declared requirements, are the stack the user installs (the
environment).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CAUSED = re.compile(r"^The conflict is caused by:?$")
_DEPENDS = re.compile(r"^(?P<pkg>[\w.-]+) [\w.+!*-]+ depends on (?P<req>[\w.-]+)")
_USER = re.compile(r"^The user requested (?P<req>\S+)")
_REQUIRES = re.compile(
    r"^(?P<pkg>[\w.-]+) [\w.+!*-]+ requires .+, but you have .+ which is incompatible\.?$"
)
_END = re.compile(r"^(?:To fix this|ERROR: ResolutionImpossible|Additionally, some packages)")
#: Lines after pip's refusal within which its list of causes is read.
WINDOW = 40


@dataclass
class PipConflict:
    """Reads the lines after pip's refusal (``start``) into its list of causes."""

    start: int = 0
    depends: list[tuple[str, str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # the causes as pip wrote them
    requested: list[str] = field(default_factory=list)
    #: installed packages whose declared requirements others broke (the report after
    #: an install pip went through with)
    broken: list[str] = field(default_factory=list)
    _in_list: bool = False
    _done: bool = False

    @property
    def collecting(self) -> bool:
        return self.start > 0 and not self._done

    def feed(self, number: int, text: str) -> None:
        if not self.collecting:
            return
        if number > self.start + WINDOW:
            self._done = True
            return
        t = text.strip()
        if _CAUSED.match(t):
            self._in_list = True
            return
        broken = _REQUIRES.match(t)
        if broken and (self._in_list or not self.lines):
            self._in_list = True
            self.broken.append(broken["pkg"])
            if len(self.lines) < 12:
                self.lines.append(t)
            return
        if not self._in_list:
            return
        if _END.match(t) or (not t and (self.depends or self.requested or self.broken)):
            self._done = True
            return
        d = _DEPENDS.match(t)
        if d:
            self.depends.append((d["pkg"], d["req"]))
        u = _USER.match(t)
        if u:
            self.requested.append(u["req"])
        if (d or u) and len(self.lines) < 12:
            self.lines.append(t)

    def summary(self) -> str:
        """The causes pip listed, in a line (empty where none were read): behind pip's
        ``The conflict is caused by:`` for a refusal; as pip wrote them after an install."""
        if not self.lines:
            return ""
        if self.broken:
            return "; ".join(self.lines)
        return "The conflict is caused by: " + "; ".join(self.lines)

    def blame(self) -> tuple[str, str] | None:
        """(rule, why) of whose the conflict is, or None where pip's causes are not in
        view."""
        if self.broken and not self.depends and not self.requested:
            return (
                "environment",
                "the installed packages break what other installed packages declare (pip "
                "went through with the install): the stack installed, not vLLM's code",
            )
        if not self.depends and not self.requested:
            return None
        pkgs = {p.lower() for p, _ in self.depends}
        if len(pkgs) == 1 and not self.requested:
            pkg = self.depends[0][0]
            reqs = sorted({r for _, r in self.depends})
            return (
                f"dependency:{pkg}",
                f"every release of {pkg} pip could pick depends on {', '.join(reqs)}, which "
                "pip cannot install: a defect in that package's dependencies, not in vLLM's "
                "code",
            )
        return (
            "environment",
            "the requirements asked together conflict with what the packages declare: the "
            "stack being installed, not vLLM's code",
        )
