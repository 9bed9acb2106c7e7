"""The catalogue of known failure signatures: data (``catalogue.yaml``), not code.

A user's file (``--catalogue FILE`` or ``$VLLMDIAG_CATALOGUE``) has the same format; its
entries are tried before the bundled ones, so it can refine or override them. A pattern
that could backtrack without end is refused at load, and a lookup runs under a time
budget (see ``regexguard``): a catalogue cannot hang triage.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from vllmdiag.errors import ConfigError
from vllmdiag.readers.triage.blame import RULE
from vllmdiag.services.config.yamlsrc import load_commented
from vllmdiag.services.regexguard import RegexTimeout, nested_repeat, time_limit

BUNDLED = Path(__file__).resolve().parent / "catalogue.yaml"
ENV_VAR = "VLLMDIAG_CATALOGUE"
_KEYS = {
    "name",
    "pattern",
    "frames",
    "benign",
    "meaning",
    "next_step",
    "advice",
    "arms",
    "blame",
    "why",
    "raised_by",
}
#: Text a pattern is searched in is cut here (a message can be a page long).
MAX_MATCH_TEXT = 4000


@dataclass(frozen=True)
class Entry:
    name: str
    pattern: re.Pattern[str]
    meaning: str
    next_step: str
    arms: tuple[str, ...] = ()
    frames: re.Pattern[str] | None = None
    benign: bool = False
    source: str = ""
    advice: str = ""
    #: whose fault it is (see :mod:`vllmdiag.readers.triage.blame`): ``frames`` leaves it to them
    blame: str = "frames"
    why: str = ""
    #: a regex the innermost frame (``path:function``) must match: a check site of vLLM
    #: whose message a paste may cut (``weight_utils.py:get_quant_config``)
    raised_by: re.Pattern[str] | None = None


@dataclass(frozen=True)
class Hit:
    """A catalogue entry that matched, with its text filled in."""

    entry: Entry
    meaning: str
    next_step: str
    advice: str | None = None
    why: str | None = None

    @property
    def name(self) -> str:
        return self.entry.name


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def _fill(template: str, values: Mapping[str, str]) -> str:
    try:
        return template.format_map(_Blank(values))
    except (ValueError, IndexError):  # a stray brace in a user's text: leave it as written
        return template


@dataclass(frozen=True)
class Catalogue:
    entries: tuple[Entry, ...]
    #: Entries skipped because a lookup ran past the time budget, with where they are.
    timed_out: dict[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def load(cls, extra: Path | None = None, *, use_env: bool = True) -> Catalogue:
        """Bundled entries, after those of ``extra`` (or ``$VLLMDIAG_CATALOGUE``)."""
        entries: list[Entry] = []
        if extra is None and use_env and os.environ.get(ENV_VAR):
            extra = Path(os.environ[ENV_VAR])
        if extra is not None:
            entries += load_file(extra)
        entries += load_file(BUNDLED)
        return cls(tuple(entries))

    def match(
        self,
        signature: str,
        raw: str,
        frames: Iterable[str] = (),
        values: Mapping[str, str] | None = None,
        *,
        raiser: str = "",
    ) -> Hit | None:
        files = tuple(frames)
        raw = raw[:MAX_MATCH_TEXT]
        start = 0
        while start < len(self.entries):
            current = start
            try:
                with time_limit():
                    for current in range(start, len(self.entries)):
                        entry = self.entries[current]
                        if entry.name in self.timed_out:
                            continue
                        m = entry.pattern.search(signature) or entry.pattern.search(raw)
                        if m is None:
                            continue
                        if entry.frames is not None and not any(
                            entry.frames.search(f) for f in files
                        ):
                            continue
                        site = entry.raised_by.search(raiser) if entry.raised_by else None
                        if entry.raised_by is not None and site is None:
                            continue
                        found = {**(values or {}), **(site.groupdict() if site else {})}
                        return _hit(entry, m, found)
                return None
            except RegexTimeout:
                slow = self.entries[current]
                self.timed_out[slow.name] = slow.source
                start = current + 1
        return None


def _hit(entry: Entry, m: re.Match[str], values: Mapping[str, str] | None) -> Hit:
    vals = {**(values or {}), **{k: v for k, v in m.groupdict().items() if v}}
    advice = _fill(entry.advice, vals) if entry.advice else None
    why = _fill(entry.why, vals) if entry.why else None
    return Hit(entry, _fill(entry.meaning, vals), _fill(entry.next_step, vals), advice, why)


def load_file(path: Path) -> list[Entry]:
    """Parse one catalogue file; a mistake raises :class:`ConfigError` at file:line.
    Parsed files are kept while unchanged (a matrix triages many logs)."""
    try:
        stat = path.stat()
    except OSError:
        stat = None
    if stat is not None:
        return list(_load_cached(path.resolve(), stat.st_mtime_ns, stat.st_size))
    return list(_parse(path))


@functools.lru_cache(maxsize=16)
def _load_cached(path: Path, _mtime: int, _size: int) -> tuple[Entry, ...]:
    return tuple(_parse(path))


def _parse(path: Path) -> list[Entry]:
    # the limits every YAML file vllmdiag reads has: a bounded regular file (never a
    # FIFO or /dev/zero), 64 levels, no alias bombs, scalars that build
    root = load_commented(path, what="catalogue")
    if not isinstance(root, CommentedMap):
        raise ConfigError(
            "a catalogue is a mapping with a list under 'entries', not "
            + ("an empty file" if root is None else f"a {_kind(root)}"),
            where=f"{path}:1:1",
            hint="see the bundled vllmdiag/readers/triage/catalogue.yaml for the format",
        )
    if not isinstance(root.get("entries"), list):
        got = root.get("entries")
        raise ConfigError(
            "'entries' must be a list of entries, not "
            + ("missing" if got is None else f"a {_kind(got)}"),
            where=_key_where(path, root, "entries"),
            hint="see the bundled vllmdiag/readers/triage/catalogue.yaml for the format",
        )
    out: list[Entry] = []
    for i, item in enumerate(root["entries"]):
        where = _where(path, root["entries"], i)
        out.append(_entry(item, where, path))
    return out


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return f"{type(value).__name__} ({str(value)[:40]!r})"


def _key_where(path: Path, root: Any, key: str) -> str:
    try:
        line, col = root.lc.key(key)
        return f"{path}:{line + 1}:{col + 1}"
    except (AttributeError, KeyError, TypeError):
        return f"{path}:1:1"


def _where(path: Path, seq: Any, index: int) -> str:
    try:
        line, col = seq.lc.item(index)
        return f"{path}:{line + 1}:{col + 1}"
    except (AttributeError, KeyError, TypeError):
        return str(path)


def _entry(item: Any, where: str, path: Path) -> Entry:
    if not isinstance(item, Mapping):
        raise ConfigError(
            "each entry is a mapping (name, pattern, meaning, next_step)", where=where
        )
    unknown = set(item) - _KEYS
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(sorted(map(str, unknown)))}",
            where=where,
            hint=f"an entry takes: {', '.join(sorted(_KEYS))}",
        )
    for key in ("name", "pattern", "meaning", "next_step"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise ConfigError(f"entry needs a non-empty string '{key}'", where=where)
    pattern = _regex(item["pattern"], where, "pattern")
    frames = _regex(item["frames"], where, "frames") if item.get("frames") else None
    raised_by = _regex(item["raised_by"], where, "raised_by") if item.get("raised_by") else None
    arms = item.get("arms") or []
    if not isinstance(arms, list) or not all(isinstance(a, str) for a in arms):
        raise ConfigError("'arms' is a list of arm names", where=where)
    advice = item.get("advice") or ""
    if not isinstance(advice, str):
        raise ConfigError("'advice' is a string", where=where)
    why = item.get("why") or ""
    if not isinstance(why, str):
        raise ConfigError("'why' is a string (one line)", where=where)
    blame = item.get("blame") or "frames"
    if not isinstance(blame, str) or not RULE.match(blame.strip()):
        raise ConfigError(
            f"'blame' is not one of whose faults triage knows: {blame!r}",
            where=where,
            hint="frames, vllm, config, environment, unknown, request, drift, placement, "
            "dependency:PACKAGE or caller[:PACKAGE]",
        )
    return Entry(
        name=item["name"].strip(),
        pattern=pattern,
        meaning=" ".join(item["meaning"].split()),
        next_step=" ".join(item["next_step"].split()),
        arms=tuple(arms),
        frames=frames,
        benign=bool(item.get("benign", False)),
        source=where,
        advice=" ".join(advice.split()),
        blame=blame.strip(),
        why=" ".join(why.split()),
        raised_by=raised_by,
    )


def _regex(text: Any, where: str, key: str) -> re.Pattern[str]:
    if not isinstance(text, str):
        raise ConfigError(f"'{key}' must be a string (a Python regex)", where=where)
    try:
        compiled = re.compile(text)
    except re.error as exc:
        raise ConfigError(f"'{key}' is not a valid regex: {exc}", where=where) from None
    nested = nested_repeat(text)
    if nested:
        raise ConfigError(
            f"'{key}' could backtrack without end: {nested}",
            where=where,
            hint="repeat a simple class instead, e.g. '(a+)+$' -> 'a+$'",
        )
    return compiled
