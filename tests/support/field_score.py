"""Scores triage on a corpus of real failure logs against its hand-read truth.

A corpus is a directory of logs and a ``truth.yaml`` (see ``fixtures/logs/field*/``). Each
entry's root cause is right when type, message (start and ``contains``), process and the
other keys the entry names all match, or, for an ``unknowable`` entry, when triage names
no root cause and says it cannot know. Blame agrees when the root cause's ``origin`` (who
must act; and its ``package`` for dependency and caller, where the hand reading names
one) equals the entry's ``blame`` (``blame_package``); an unknowable entry agrees when
triage blames no one (``unknown``).

Where the thread names another party than the paste shows (the hand reading blames only
a party the paste gives a sign of, see ``docs/blame.md``), an entry records it under
``thread_blame`` (``caller``, ``caller:ray``, or a mapping with ``blame`` and
``blame_package``; ``thread_blame_package`` may name the package apart); agreement with
it is counted apart, over the entries that have one. A package agrees however the
project is spelt (its module, distribution or repository name: ``lm_eval`` is
``lm-evaluation-harness``). An entry with neither a root cause
read by hand nor ``unknowable`` (a corpus read for blame only) is not counted for root
causes.

Run over the CLI's own JSON, one ``vllmdiag triage --json`` per log::

    python tests/support/field_score.py [CORPUS_DIR ...]    # default: fixtures/logs/field2
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

HERE = Path(__file__).resolve().parent.parent
FIELD2 = HERE / "fixtures" / "logs" / "field2"
KEYS = ("type", "process", "evidence", "origin", "package", "known")
EVIDENCE = {"traceback", "exception-line", "death-line", "wrapper-message", "cli-error"}
BLAMES = {"vllm", "dependency", "caller", "config", "environment", "tool", "unknown"}


def load_truth(corpus: Path) -> list[dict[str, Any]]:
    logs: list[dict[str, Any]] = YAML(typ="safe").load((corpus / "truth.yaml").read_text())["logs"]
    return logs


def entry_faults(entry: Mapping[str, Any]) -> list[str]:
    """What a hand-read entry of a held-out corpus lacks (empty: it is whole): its
    thread's address, a blame of the convention with a why and the thread's own, and
    either ``unknowable`` (blaming no one) or the root cause's evidence, message and
    process."""
    faults = []
    if not str(entry.get("source", "")).startswith("https://github.com/"):
        faults.append("source is no GitHub thread")
    if entry.get("blame") not in BLAMES or not entry.get("why") or "thread_blame" not in entry:
        faults.append("blame, why or thread_blame missing")
    if entry.get("unknowable"):
        if entry.get("blame") != "unknown":
            faults.append("an unknowable entry blames someone")
    elif entry.get("evidence") not in EVIDENCE or not {"message", "process"} <= set(entry):
        faults.append("evidence, message or process missing")
    return faults


def root_cause_wrong(entry: Mapping[str, Any], triage: Mapping[str, Any]) -> list[str]:
    """What triage (as its JSON) got wrong about one log's root cause (empty: right)."""
    rc = triage.get("root_cause")
    note = triage.get("note") or ""
    if entry.get("unknowable"):
        if rc is not None:
            return [f"guessed {rc['type']}: {rc['message'][:100]} where nothing can be known"]
        return [] if note.startswith("unknown:") else [f"note: {note!r}"]
    if rc is None:
        return [f"no root cause: {note}"]
    wrong = [
        f"{k}: {rc.get(k)!r} != {entry[k]!r}" for k in KEYS if k in entry and rc.get(k) != entry[k]
    ]
    if not rc["message"].startswith(entry["message"]):
        wrong.append(f"message: {rc['message'][:120]!r}")
    wrong += [f"message lacks {c!r}" for c in entry.get("contains", []) if c not in rc["message"]]
    return wrong


def blame_of(triage: Mapping[str, Any], states_blame: bool) -> tuple[str, str | None] | None:
    """(blame, package) as triage states it (``root_cause.origin``: who must act, with
    ``package`` and a ``why``); None where this build states no blame. ``states_blame``:
    this build's root causes carry one at all (without a root cause, triage then blames
    no one: ``unknown``)."""
    rc = triage.get("root_cause")
    if rc is None:
        return ("unknown", None) if states_blame else None
    if "why" not in rc:
        return None  # a build whose origin only said where the exception was raised
    return (rc["origin"], rc.get("package"))


def blame_wrong(
    entry: Mapping[str, Any], triage: Mapping[str, Any], states_blame: bool
) -> str | None:
    """Why the stated blame differs from the hand reading (None: agrees or not stated)."""
    want = entry.get("blame", entry.get("origin"))  # field/: origin is the hand reading
    # field/ and blame/ name the package ``package``; the later corpora ``blame_package``
    pkg = entry.get("blame_package", entry.get("package"))
    return _differs(blame_of(triage, states_blame), want, pkg)


def thread_blame(entry: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """(blame, package) the thread names, where the entry records one: ``caller``,
    ``caller:ray`` or ``caller (ray)``, or a mapping with ``blame`` (or ``origin``) and
    ``blame_package`` (or ``package``); ``thread_blame_package`` names it apart."""
    value = entry.get("thread_blame")
    if value is None:
        return None
    if isinstance(value, Mapping):
        kind = value.get("blame", value.get("origin"))
        pkg = value.get("blame_package", value.get("package"))
    else:
        text = str(value).strip()
        kind, _, pkg = text.replace("(", ":").rstrip(")").partition(":")
        kind, pkg = kind.strip(), pkg.strip() or None
    pkg = entry.get("thread_blame_package", pkg)
    return (str(kind), str(pkg) if pkg else None) if kind else None


def thread_blame_wrong(
    entry: Mapping[str, Any], triage: Mapping[str, Any], states_blame: bool
) -> str | None:
    """Why the stated blame differs from the thread's (None: agrees, or no thread blame
    or no stated blame)."""
    want = thread_blame(entry)
    if want is None:
        return None
    return _differs(blame_of(triage, states_blame), want[0], want[1])


def _differs(got: tuple[str, str | None] | None, want: Any, pkg: Any) -> str | None:
    from vllmdiag.readers.triage.callers import same_project

    if got is None or want is None:
        return None
    if got[0] != want:
        return f"blame {got[0]!r} != {want!r}"
    if want in ("dependency", "caller") and pkg and not same_project(got[1] or "", str(pkg)):
        return f"blame package {got[1]!r} != {pkg!r}"
    return None


def reads_root_cause(entry: Mapping[str, Any]) -> bool:
    """The entry holds a root cause read by hand (or says none can be known)."""
    return bool(entry.get("unknowable")) or "message" in entry


@dataclass
class Score:
    corpus: str
    total: int
    right: int
    misses: list[tuple[str, str]]  # (file, what was wrong or the expected_miss reason)
    blamed: int  # entries whose triage states a blame
    blame_agree: int
    blame_misses: list[tuple[str, str]]
    #: entries with a ``thread_blame`` whose triage states a blame, and how many agree
    thread_blamed: int = 0
    thread_agree: int = 0
    thread_misses: list[tuple[str, str]] = field(default_factory=list)
    #: entries read for blame only (no root cause read by hand): not in ``total``
    blame_only: int = 0

    def lines(self) -> list[str]:
        only = f" ({self.blame_only} read for blame only)" if self.blame_only else ""
        out = [f"{self.corpus}: root cause right for {self.right} of {self.total}{only}"]
        out += [f"  miss {f}: {why}" for f, why in self.misses]
        if self.blamed:
            out.append(f"{self.corpus}: blame agrees for {self.blame_agree} of {self.blamed}")
            out += [f"  blame miss {f}: {why}" for f, why in self.blame_misses]
        else:
            out.append(f"{self.corpus}: triage states no blame (origin only)")
        if self.thread_blamed:
            out.append(
                f"{self.corpus}: thread blame agrees for {self.thread_agree} of "
                f"{self.thread_blamed}"
            )
            out += [f"  thread blame miss {f}: {why}" for f, why in self.thread_misses]
        return out


def score(corpus: Path, triage_of: Callable[[Path], Mapping[str, Any]]) -> Score:
    truth = load_truth(corpus)
    misses: list[tuple[str, str]] = []
    blame_misses: list[tuple[str, str]] = []
    thread_misses: list[tuple[str, str]] = []
    blamed = thread_blamed = 0
    results = [(entry, triage_of(corpus / entry["file"])) for entry in truth]
    states_blame = any("why" in (t.get("root_cause") or {}) for _, t in results)
    read = [e for e in truth if reads_root_cause(e)]
    for entry, t in results:
        if reads_root_cause(entry):
            wrong = root_cause_wrong(entry, t)
            if entry.get("expected_miss"):
                misses.append((entry["file"], f"expected: {entry['expected_miss']}"))
            elif wrong:
                misses.append((entry["file"], "; ".join(wrong)))
        if blame_of(t, states_blame) is None:
            continue
        if "blame" in entry or "origin" in entry:
            blamed += 1
            why = blame_wrong(entry, t, states_blame)
            if why:
                blame_misses.append((entry["file"], why))
        if thread_blame(entry) is not None:
            thread_blamed += 1
            why = thread_blame_wrong(entry, t, states_blame)
            if why:
                thread_misses.append((entry["file"], why))
    return Score(
        corpus.name,
        len(read),
        len(read) - len(misses),
        misses,
        blamed,
        blamed - len(blame_misses),
        blame_misses,
        thread_blamed,
        thread_blamed - len(thread_misses),
        thread_misses,
        len(truth) - len(read),
    )


def cli_triage(log: Path) -> Mapping[str, Any]:
    """``vllmdiag triage --json LOG``, run as a user runs it."""
    from vllmdiag.services import proc

    exe = Path(sys.executable).parent / "vllmdiag"
    r = proc.run([str(exe), "triage", "--json", str(log)], timeout=120, capture=True)
    if r.rc != 0:
        raise RuntimeError(f"{log.name}: triage exited {r.rc}: {r.stderr.strip()[-300:]}")
    result: Mapping[str, Any] = json.loads(r.stdout)
    return result


def library_triage(log: Path) -> Mapping[str, Any]:
    """The same JSON, from the library in this process (what the tests use)."""
    from vllmdiag import codec
    from vllmdiag.readers.triage import Catalogue, triage_file

    result: Mapping[str, Any] = codec.dump(triage_file(log, Catalogue.load(use_env=False)))
    return result


def main(argv: list[str]) -> int:
    corpora = [Path(a) for a in argv] or [FIELD2]
    for c in corpora:
        print("\n".join(score(c, cli_triage).lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
