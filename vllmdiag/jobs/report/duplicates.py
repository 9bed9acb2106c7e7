"""Search terms for finding duplicates: the signature's stable words (what stays the same
from run to run once numbers, paths and ids are masked), the names it mentions, and the
package and symbol of the window."""

from __future__ import annotations

import re
from urllib.parse import quote_plus

from vllmdiag.jobs.report import md
from vllmdiag.jobs.window import WindowResult

_MASKS = re.compile(r"<(?:n|path|url|addr|id)>")
_NAMES = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[a-z]+(?:_[a-z0-9]+)+")
_QUOTED = re.compile(r"'([A-Za-z_][\w.]*)'")
#: A phrase longer than this is cut at a word boundary (search boxes want phrases).
PHRASE_MAX = 80
ISSUES = "https://github.com/vllm-project/vllm/issues?q="


def terms(signature: str, window: WindowResult | None = None) -> list[str]:
    exc, sep, message = signature.partition(": ")
    if not sep:
        exc, message = "", signature
    out: list[str] = []
    phrase = _phrase(message)
    if phrase:
        out.append(f'"{phrase}"')
    names = list(dict.fromkeys(_QUOTED.findall(message) + _NAMES.findall(message)))
    if exc and names:
        out.append(f"{exc} {names[0]}")
    elif exc:
        out.append(exc)
    out += names[:4]
    if window is not None:
        out.append(f"{window.package} {window.symbol.rsplit('.', 1)[-1]}")
        out.append(window.symbol)
    return list(dict.fromkeys(t for t in out if t))


def _phrase(message: str) -> str:
    """The longest unmasked run of the message's first sentence."""
    first = re.split(r"(?<=[.!?])\s", message, maxsplit=1)[0].rstrip(".")
    pieces = [p.strip(" ,;:()") for p in _MASKS.split(first)]
    best = max(pieces, key=len, default="")
    if len(best) <= PHRASE_MAX:
        return best.replace('"', "")
    cut = best[:PHRASE_MAX].rsplit(" ", 1)[0]
    return cut.replace('"', "")


def section(signature: str, window: WindowResult | None, project: str) -> str | None:
    found = terms(signature, window)
    if not found:
        return None
    out = ["Search existing issues for:", "", *(f"- {md.code(t)}" for t in found)]
    if project == "vllm":
        query = quote_plus(f"is:issue {found[0]}")
        out += ["", f"[Search vLLM's issues for the first]({ISSUES}{query})."]
    return "\n".join(out)
