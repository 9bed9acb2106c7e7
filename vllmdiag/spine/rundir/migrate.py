"""The one chain of schema migrations: each step takes a run directory's records from
schema ``n`` to ``n + 1``, and a record of any readable schema is read by walking the
chain to :data:`SCHEMA`, then through the codec.

Journal lines and results carry their schema number; a manifest and a leg record carry
none, so theirs is told by their shape (schema 1 kept the stack under distribution
names, and the hygiene reports by leg name without ``per_leg``).

Schema 1 → 2:

- a result named its reuse key ``fingerprint``, the run's fingerprint
  ``run_fingerprint`` (its derived ``startup_dominant`` shaped differently, so dropped;
  a reader's error instead of facts, so none), and kept the root cause as a free-form
  object;
- a journal's ``cell_started`` named the reuse key ``fingerprint``, and its
  ``cell_finished`` kept the outcome beside the id instead of a whole result;
- a leg record's stack was keyed by distribution name (``flashinfer-python``), as the
  stack probe reports it;
- the manifest kept each leg's doctor report by leg name, without ``per_leg``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vllmdiag import codec
from vllmdiag.model.fingerprint import Fingerprint
from vllmdiag.model.outcome import CauseSummary
from vllmdiag.model.stack import DISTRIBUTIONS, StackInfo

#: What this vllmdiag writes.
SCHEMA = 2
#: What it reads (and resumes).
READABLE = (1, 2)

Data = dict[str, Any]
Upgrade = Callable[[Data], Data]


@dataclass(frozen=True)
class Step:
    """One link of the chain: how each kind of record goes from one schema to the next."""

    result: Upgrade
    event: Upgrade
    env: Upgrade
    manifest: Upgrade


def _result_1(data: Data) -> Data:
    new = {k: v for k, v in data.items() if k not in ("fingerprint", "run_fingerprint")}
    new["reuse_key"] = data.get("fingerprint", "")
    facts = data.get("run_fingerprint")
    fp = None
    if isinstance(facts, Mapping) and "reader_error" not in facts:
        derived = ("startup_dominant",)
        kept = {k: v for k, v in facts.items() if k not in derived}
        fp = codec.dump(codec.load(Fingerprint, kept))
    new["fingerprint"] = fp
    cause = data.get("root_cause")
    new["root_cause"] = (
        codec.dump(codec.load(CauseSummary, cause)) if isinstance(cause, Mapping) else None
    )
    return new


def _event_1(data: Data) -> Data:
    if "fingerprint" not in data or data.get("event") not in ("cell_started", "cell_finished"):
        return data
    new = {k: v for k, v in data.items() if k != "fingerprint"}
    new.setdefault("reuse_key", data["fingerprint"])
    return new


#: Distribution names the stack probe reports that are not the stack's field names.
_RENAMED = frozenset(k for k, v in DISTRIBUTIONS.items() if k != v)


def _env_1(data: Data) -> Data:
    stack = data.get("stack")
    if isinstance(stack, Mapping):
        return {**data, "stack": codec.dump(StackInfo.from_probe(stack))}
    return data


def _manifest_1(data: Data) -> Data:
    hygiene = data.get("hygiene")
    if isinstance(hygiene, Mapping):
        return {**data, "hygiene": {"per_leg": dict(hygiene)}}
    return data


#: ``CHAIN[n]`` takes a record of schema ``n`` to ``n + 1``.
CHAIN: dict[int, Step] = {1: Step(_result_1, _event_1, _env_1, _manifest_1)}


def _walk(data: Data, schema: int, kind: str) -> Data:
    for n in range(schema, SCHEMA):
        data = getattr(CHAIN[n], kind)(data)
    return data


def schema_of(data: Mapping[str, Any]) -> Any:
    """The schema a result or journal line says it has (results of schema 1 said none)."""
    return data.get("schema", 1)


def result(data: Mapping[str, Any]) -> Data:
    """A ``result.json``, of any readable schema, as the current one writes it."""
    return _walk(dict(data), int(schema_of(data)), "result")


def event(data: Mapping[str, Any]) -> Data:
    """A journal line, of any readable schema, as the current one writes it."""
    schema = schema_of(data)
    return _walk(dict(data), schema if schema in READABLE else SCHEMA, "event")


def env(data: Mapping[str, Any]) -> Data:
    """A leg record as the current schema writes it."""
    stack = data.get("stack")
    old = isinstance(stack, Mapping) and bool(set(stack) & _RENAMED)
    return _walk(dict(data), 1 if old else SCHEMA, "env")


def manifest(data: Mapping[str, Any]) -> Data:
    """A ``manifest.json`` as the current schema writes it."""
    hygiene = data.get("hygiene")
    old = isinstance(hygiene, Mapping) and "per_leg" not in hygiene
    return _walk(dict(data), 1 if old else SCHEMA, "manifest")
