"""Everything a report says goes through one :class:`Redactor`, which masks and counts.

On top of :mod:`vllmdiag.services.redact` (secrets, credentials in URLs, this user's home and
names, this host), a report also masks what the run directories and the text reveal of
other machines: the hosts each run was recorded on (however short their names), every
``/home/NAME`` and ``/Users/NAME`` home, ``USER=``/``HOSTNAME=``-style values, and
values that look like API tokens by their shape alone. Values the run directory already
held masked (``***``) are counted too: the count says what the report withholds.
"""

from __future__ import annotations

import os
import pwd
import re
import socket
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from vllmdiag.services import redact

# API tokens recognisable by their shape (Hugging Face, GitHub, OpenAI-style, AWS access
# key ids, Slack, GitLab): each alternative starts with a fixed prefix, so the scan is
# linear in the text.
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_-])(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
    r"|sk-(?:proj-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|glpat-[A-Za-z0-9_-]{20,})"
)
_HOMES = re.compile(r"(?<![\w.-])/(?:home|Users)/[A-Za-z0-9_][\w.-]*")
_WHO = re.compile(r"\b(?P<name>USER|LOGNAME|USERNAME|HOSTNAME)=(?P<value>[^\s\"',;]+)")
# Masks already in the text: a URL's (``user:***@``, ``//***@``), then any other.
_PREMASKED_URL = re.compile(r"(?::|//)\*\*\*@")
_PREMASKED = re.compile(r"(?<!\*)\*\*\*(?!\*)")


class Redactor:
    """Masks what must not leave the machine and counts it by kind (one per value
    masked, wherever it appears)."""

    def __init__(self, hosts: Iterable[str] = (), bases: Iterable[Path] = ()) -> None:
        self.tally: Counter[str] = Counter()
        # Paths under a run directory or a recipe's folder are named relative to it (a
        # report for sharing names ``engine_start.py:35``, not where it lay here);
        # the deepest first, so a run kept inside the recipe's folder is named from the run.
        self.bases = sorted(
            {b for b in bases if str(b) not in ("", ".", "/")}, key=lambda b: -len(str(b))
        )
        local = socket.gethostname()
        self.hosts = sorted(
            {h for h in (*hosts, local) if len(h) >= 2 and h != "localhost"},
            key=len,
            reverse=True,
        )
        self.homes = tuple(h for h in {_own_home()} if h and h != "/")

    def __call__(self, text: str, *, premasked: bool = True) -> str:
        """``text`` redacted; ``premasked``: count the masks it already holds (off for
        a word that is redacted again, counted, inside the text it goes into)."""
        if premasked:
            url_masks = len(_PREMASKED_URL.findall(text))
            self.tally[redact.URL_CREDENTIAL] += url_masks
            self.tally[redact.SECRET] += len(_PREMASKED.findall(text)) - url_masks
        out = redact.text(text, tally=self.tally)
        for base in self.bases:
            out = redact.paths(out, base=base)
        out = _TOKEN.sub(self._count(redact.SECRET, redact.MASK), out)
        homes = {*self.homes, *_HOMES.findall(out)}
        out = redact.paths(out, homes=homes, tally=self.tally)
        out = redact.identity(out, tally=self.tally)
        out = _WHO.sub(self._who, out)
        for host in self.hosts:
            out, n = re.subn(rf"(?<![\w-]){re.escape(host)}(?![\w-])", "<host>", out)
            self.tally[redact.HOST_NAME] += n
        return out

    def counts(self) -> dict[str, int]:
        """Every kind, in a fixed order, zero included."""
        return {kind: self.tally[kind] for kind in redact.KINDS}

    def _count(self, kind: str, mask: str) -> Callable[[re.Match[str]], str]:
        def sub(_m: re.Match[str]) -> str:
            self.tally[kind] += 1
            return mask

        return sub

    def _who(self, m: re.Match[str]) -> str:
        if m.group("value") in ("<user>", "<host>"):
            return m.group(0)
        host = m.group("name") == "HOSTNAME"
        self.tally[redact.HOST_NAME if host else redact.USER_NAME] += 1
        return f"{m.group('name')}={'<host>' if host else '<user>'}"


def footer(counts: dict[str, int]) -> str:
    """The body's last line: what was redacted, by kind."""
    words = {
        redact.SECRET: ("secret", "secrets"),
        redact.URL_CREDENTIAL: ("credential in a URL", "credentials in URLs"),
        redact.HOME_PATH: ("home path", "home paths"),
        redact.USER_NAME: ("user name", "user names"),
        redact.HOST_NAME: ("host name", "host names"),
    }
    parts = [f"{n} {words[k][0] if n == 1 else words[k][1]}" for k, n in counts.items()]
    if not any(counts.values()):
        return "Redacted before sharing: nothing (no secret, home path, user or host name)."
    return "Redacted before sharing: " + ", ".join(parts) + "."


def _own_home() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir.rstrip("/")
    except (KeyError, OSError):
        return ""
