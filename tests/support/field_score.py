"""Scores triage on a corpus of real failure logs against its hand-read truth.

A corpus is a directory of logs and a ``truth.yaml`` (see ``fixtures/logs/field*/``). Each
entry's root cause is right when type, message (start and ``contains``), process and the
other keys the entry names all match, or, for an ``unknowable`` entry, when triage names
no root cause and says it cannot know. Blame agrees when the root cause's ``origin`` (who
must act; and its ``package`` for dependency and caller, where the hand reading names
one) equals the entry's ``blame`` (``blame_package``); an unknowable entry agrees when
triage blames no one (``unknown``).

Run over the CLI's own JSON, one ``vllmdiag triage --json`` per log::

    python tests/support/field_score.py [CORPUS_DIR ...]    # default: fixtures/logs/field2
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
    got = blame_of(triage, states_blame)
    want = entry.get("blame", entry.get("origin"))  # field/: origin is the hand reading
    if got is None or want is None:
        return None
    if got[0] != want:
        return f"blame {got[0]!r} != {want!r}"
    pkg = entry.get("blame_package")
    if want in ("dependency", "caller") and pkg and (got[1] or "").lower() != pkg.lower():
        return f"blame package {got[1]!r} != {pkg!r}"
    return None


@dataclass
class Score:
    corpus: str
    total: int
    right: int
    misses: list[tuple[str, str]]  # (file, what was wrong or the expected_miss reason)
    blamed: int  # entries whose triage states a blame
    blame_agree: int
    blame_misses: list[tuple[str, str]]

    def lines(self) -> list[str]:
        out = [f"{self.corpus}: root cause right for {self.right} of {self.total}"]
        out += [f"  miss {f}: {why}" for f, why in self.misses]
        if self.blamed:
            out.append(f"{self.corpus}: blame agrees for {self.blame_agree} of {self.blamed}")
            out += [f"  blame miss {f}: {why}" for f, why in self.blame_misses]
        else:
            out.append(f"{self.corpus}: triage states no blame (origin only)")
        return out


def score(corpus: Path, triage_of: Callable[[Path], Mapping[str, Any]]) -> Score:
    truth = load_truth(corpus)
    misses: list[tuple[str, str]] = []
    blame_misses: list[tuple[str, str]] = []
    blamed = 0
    results = [(entry, triage_of(corpus / entry["file"])) for entry in truth]
    states_blame = any("why" in (t.get("root_cause") or {}) for _, t in results)
    for entry, t in results:
        wrong = root_cause_wrong(entry, t)
        if entry.get("expected_miss"):
            misses.append((entry["file"], f"expected: {entry['expected_miss']}"))
        elif wrong:
            misses.append((entry["file"], "; ".join(wrong)))
        if blame_of(t, states_blame) is not None and ("blame" in entry or "origin" in entry):
            blamed += 1
            why = blame_wrong(entry, t, states_blame)
            if why:
                blame_misses.append((entry["file"], why))
    return Score(
        corpus.name,
        len(truth),
        len(truth) - len(misses),
        misses,
        blamed,
        blamed - len(blame_misses),
        blame_misses,
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
