"""A run directory read back as typed values (:class:`RunRecord`), whichever schema wrote
it: every record goes through :mod:`~vllmdiag.spine.rundir.migrate`'s one chain, then
the codec.

A line or file that cannot be read (torn by a crash, damaged by hand) is left out with a
warning, never fatal and never misread. A result is trusted only where its schema is
known, no symlink leads to it, and its outcome and reuse key agree with the journal's
last record of the cell.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from vllmdiag import codec
from vllmdiag.errors import RunDirError
from vllmdiag.model.hang import HangReport
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.stack import EnvRecord
from vllmdiag.model.verdict import Verdict
from vllmdiag.readers.hygiene.summary import HygieneSummary
from vllmdiag.services import atomic
from vllmdiag.spine.rundir import layout, migrate, secrets
from vllmdiag.spine.rundir.records import (
    CellJournal,
    CellRecord,
    Ended,
    JournalEntry,
    Manifest,
    NodeManifest,
    RunEnd,
    RunRecord,
    RunStart,
    Spawn,
)

Warn = Callable[[str], None]


def _first(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


def read_run(path: Path, warn: Warn | None = None) -> RunRecord:
    """Everything the run directory at ``path`` holds that reads back."""
    secrets.learn(path)
    warnings: list[str] = []

    def note(text: str) -> None:
        warnings.append(text)
        if warn is not None:
            warn(text)

    journal = read_journal(path, note)
    per_cell = cell_journals(journal)
    results = read_results(path, note, {i: j.recorded for i, j in per_cell.items()})
    cells = {
        cid: CellRecord(cid, results.get(cid), per_cell.get(cid, CellJournal()))
        for cid in sorted({*results, *per_cell})
    }
    manifest, recipe = read_manifest(path, note)
    return RunRecord(
        path=path,
        journal=journal,
        starts=starts(journal),
        ends=ends(journal),
        spawns=spawns(journal),
        ended=ended(journal),
        cells=cells,
        manifest=manifest,
        recipe=recipe,
        envs=read_envs(path, note),
        verdict=read_verdict(path, note),
        warnings=tuple(warnings),
    )


# -- the journal ------------------------------------------------------------------------


@contextlib.contextmanager
def _reading(file: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise RunDirError(
            f"cannot read {file.name}: {exc.strerror}",
            where=str(file),
            hint="check the path and its permissions",
        ) from None


def read_journal(path: Path, warn: Warn) -> tuple[JournalEntry, ...]:
    """Every line of ``run.jsonl`` that reads back (none where there is no journal); a
    journal that cannot be opened is a :class:`RunDirError`."""
    file = path / layout.EVENTS
    if not file.is_file():
        return ()
    out = []
    with _reading(file), open(file, "rb") as fh:
        for i, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                ev = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                warn(f"{file}:{i}: not UTF-8; line skipped")
                continue
            except (ValueError, RecursionError):
                warn(f"{file}:{i}: not JSON (torn by a crash?); line skipped")
                continue
            if not isinstance(ev, dict):
                warn(f"{file}:{i}: a JSON {type(ev).__name__}, not an event; skipped")
                continue
            schema = ev.get("schema")
            data = migrate.event(ev)
            fields = {k: v for k, v in data.items() if k not in ("schema", "event", "ts")}
            name, ts = _text(ev.get("event")), _text(ev.get("ts"))
            out.append(JournalEntry(i, name, ts, schema, fields))
    return tuple(out)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def starts(journal: Sequence[JournalEntry]) -> tuple[RunStart, ...]:
    out = []
    for e in journal:
        if e.event != "run_started":
            continue
        f = e.fields
        job = f.get("job")
        out.append(
            RunStart(
                ts=e.ts,
                recipe=_text(f.get("recipe")),
                source=_text(f.get("source")),
                host=_text(f.get("host")),
                run_id=f["run_id"] if isinstance(f.get("run_id"), str) else "",
                executor=_text(f.get("executor")),
                run_dir=_text(f.get("run_dir")),
                job=dict(job) if isinstance(job, dict) else None,
            )
        )
    return tuple(out)


def ends(journal: Sequence[JournalEntry]) -> tuple[RunEnd, ...]:
    out = []
    for e in journal:
        if e.event == "run_finished":
            by = e.fields.get("stopped_by")
            status = _text(e.fields.get("status"))
            out.append(RunEnd(e.ts, False, status, str(by) if by else None))
        elif e.event == "run_refused":
            out.append(RunEnd(e.ts, True, "refused", reason=_text(e.fields.get("reason", ""))))
    return tuple(out)


def spawns(journal: Sequence[JournalEntry]) -> tuple[Spawn, ...]:
    out = []
    for e in journal:
        pid = e.fields.get("pid")
        if e.event == "cell_spawned" and isinstance(pid, int):
            ticks = int(e.fields.get("start_ticks") or 0)
            out.append(Spawn(_text(e.fields.get("id")), pid, ticks, _text(e.fields.get("node"))))
    return tuple(out)


def ended(journal: Sequence[JournalEntry]) -> tuple[Ended, ...]:
    """Each journaled end of processes left running, in order."""
    out = []
    for e in journal:
        pids = e.fields.get("pids")
        if not isinstance(pids, list) or not pids:
            continue
        if e.event == "cell_swept":
            out.append(Ended(_text(e.fields.get("id")), tuple(pids)))
        elif e.event == "leftovers_ended":
            out.append(Ended(None, tuple(pids)))
    return tuple(out)


def cell_journals(journal: Sequence[JournalEntry]) -> dict[str, CellJournal]:
    """What the journal says of each cell it names."""
    env_by_key: dict[str, dict[str, dict[str, str]]] = {}
    last_env: dict[str, dict[str, str]] = {}
    finished_at: dict[str, dict[str, str]] = {}
    last_at: dict[str, str] = {}
    recorded: dict[str, tuple[str, str]] = {}
    for e in journal:
        f = e.fields
        result = f.get("result")
        if e.event in ("cell_finished", "cell_reused") and isinstance(result, dict):
            cid, outcome, key = result.get("id"), result.get("outcome"), result.get("reuse_key")
            if isinstance(cid, str) and isinstance(outcome, str) and isinstance(key, str):
                recorded[cid] = (outcome, key)
        if e.event not in ("cell_started", "cell_finished"):
            continue
        cid = _text(f.get("id"))
        reuse = result.get("reuse_key") if isinstance(result, dict) else f.get("reuse_key")
        env = f.get("env")
        if e.event == "cell_started" and isinstance(env, dict):
            shown = {str(k): str(v) for k, v in env.items()}
            env_by_key.setdefault(cid, {})[_text(reuse)] = shown
            last_env[cid] = shown
        elif e.event == "cell_finished":
            finished_at.setdefault(cid, {}).setdefault(_text(reuse), e.ts)
            last_at[cid] = e.ts
    ids = {*env_by_key, *finished_at, *recorded}
    return {
        cid: CellJournal(
            env_by_key=env_by_key.get(cid, {}),
            env=last_env.get(cid),
            finished_at=finished_at.get(cid, {}),
            last_finished_at=last_at.get(cid),
            recorded=recorded.get(cid),
        )
        for cid in ids
    }


# -- results ----------------------------------------------------------------------------


def load_result(data: Mapping[str, Any]) -> CellResult:
    """A ``result.json`` back as a :class:`CellResult`, whichever schema wrote it."""
    return codec.load(CellResult, migrate.result(data))


def read_results(
    path: Path, warn: Warn, recorded: Mapping[str, tuple[str, str] | None]
) -> dict[str, CellResult]:
    """Every cell's result that can be trusted (``recorded``: the journal's (outcome,
    reuse key) of each cell). One that cannot (unreadable, of a schema this vllmdiag does
    not know, behind a symlink, or disagreeing with the journal: edited by hand) is
    skipped with a warning, and the cell runs again."""
    out: dict[str, CellResult] = {}
    cells = layout.cells_dir(path)
    if layout.is_link(cells):
        warn(f"{cells}: a symlink, not the run's own directory; no result is reused")
        return out
    for file in sorted(cells.glob(f"*/{layout.RESULT}")):
        if layout.is_link(file.parent) or layout.is_link(file):
            link = file.parent if layout.is_link(file.parent) else file
            warn(f"{link}: a symlink in the run directory; ignored, the cell runs again")
            continue
        try:
            data = atomic.read_json(file, follow=False)
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            warn(f"{file}: unreadable ({exc}); the cell runs again")
            continue
        if not isinstance(data, dict):
            warn(f"{file}: a JSON {type(data).__name__}, not a result; runs again")
            continue
        if migrate.schema_of(data) not in migrate.READABLE:
            warn(
                f"{file}: result schema {data.get('schema')!r}; this vllmdiag reads "
                + ", ".join(map(str, migrate.READABLE))
                + "; the cell runs again"
            )
            continue
        try:
            res = load_result(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            warn(f"{file}: not a cell result ({_first(exc)}); the cell runs again")
            continue
        if res.id != file.parent.name:
            warn(f"{file}: holds cell {res.id!r}, not {file.parent.name!r}; ignored")
            continue
        said = recorded.get(res.id)
        if said is not None and said != (res.outcome.value, res.reuse_key):
            warn(
                f"{file}: says {res.outcome.value}, but the journal recorded "
                f"{said[0]} for this cell (edited since?); the cell runs again"
            )
            continue
        if res.log and not Path(res.log).is_absolute():
            res = dataclasses.replace(res, log=str(path / res.log))
        out[res.id] = res
    return out


def _result_beside(log: Path) -> dict[str, Any] | None:
    """The result recorded for the cell whose log ``log`` is (``cells/<id>/log.txt``),
    brought to the current schema, as data: a caller loads the part it asks for, so a
    result damaged elsewhere still says it."""
    if log.name != layout.LOG:
        return None
    try:
        data = atomic.read_json(log.parent / layout.RESULT, follow=False)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or migrate.schema_of(data) not in migrate.READABLE:
        return None
    try:
        return migrate.result(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def recorded_outcome(log: Path) -> str | None:
    """The outcome a vllmdiag run recorded for the cell whose log this is, or None: not
    a cell's log, or no readable result (then the log alone decides)."""
    data = _result_beside(log)
    try:
        return codec.load(Outcome, data["outcome"]).value if data else None
    except (KeyError, ValueError):
        return None


def recorded_hang(log: Path) -> HangReport | None:
    """Where the cell whose log this is hung, as its run recorded it, or None."""
    data = _result_beside(log)
    try:
        hang = data.get("hang") if data else None
        return codec.load(HangReport, hang) if hang is not None else None
    except ValueError:
        return None


# -- the manifest, the legs' records, the verdict ---------------------------------------


def _json(file: Path, warn: Warn) -> Any:
    if not file.exists():
        return None
    try:
        return atomic.read_json(file)
    except (OSError, ValueError) as exc:
        warn(f"{file}: unreadable ({exc}); left out")
        return None


def env_record(data: Any) -> EnvRecord:
    """A leg record (``envs/<key>.json``, or one of the manifest's), of any schema."""
    if not isinstance(data, Mapping):
        raise TypeError(f"a JSON {type(data).__name__}, not an object")
    return codec.load(EnvRecord, migrate.env(data))


def read_envs(path: Path, warn: Warn) -> dict[str, EnvRecord]:
    """The legs' records (``envs/*.json``), by key."""
    out = {}
    for file in sorted(layout.envs_dir(path).glob("*.json")):
        data = _json(file, warn)
        if data is None:
            continue
        try:
            record = env_record(data)
        except (TypeError, ValueError) as exc:
            warn(f"{file}: not a leg record ({_first(exc)}); left out")
            continue
        out[record.key] = record
    return out


def _envs_in(data: Any, where: str, warn: Warn) -> dict[str, EnvRecord]:
    out = {}
    for key, raw in (data if isinstance(data, Mapping) else {}).items():
        try:
            out[str(key)] = env_record(raw)
        except (TypeError, ValueError) as exc:
            warn(f"{where}: envs.{key}: not a leg record ({_first(exc)}); left out")
    return out


def _hygiene_in(data: Any, where: str, warn: Warn) -> HygieneSummary:
    try:
        return codec.load(HygieneSummary, data if data is not None else {})
    except ValueError as exc:
        warn(f"{where}: hygiene findings unreadable ({_first(exc)}); left out")
        return HygieneSummary()


def _errors_in(data: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, Mapping) else {}


def _nodes_in(data: Any, where: str, warn: Warn) -> dict[str, NodeManifest] | None:
    if not isinstance(data, Mapping):
        return None
    out = {}
    for label, node in data.items():
        if not isinstance(node, Mapping):
            warn(f"{where}: nodes.{label}: not a node; left out")
            continue
        gpus = node.get("gpus")
        out[str(label)] = NodeManifest(
            id=_text(node.get("id")),
            gpus=tuple(str(g) for g in gpus) if isinstance(gpus, list) else None,
            envs=_envs_in(node.get("envs"), f"{where}: nodes.{label}", warn),
            env_errors=_errors_in(node.get("env_errors")),
            hygiene=_hygiene_in(node.get("hygiene"), f"{where}: nodes.{label}", warn),
        )
    return out


def _manifest_of(data: Mapping[str, Any], where: str, warn: Warn) -> Manifest:
    """The manifest's sections that read back (one that does not: empty, with a warning)."""
    data = migrate.manifest(data)
    recipe = data.get("recipe")
    return Manifest(
        recipe=dict(recipe) if isinstance(recipe, Mapping) else {},
        envs=_envs_in(data.get("envs"), where, warn),
        env_errors=_errors_in(data.get("env_errors")),
        hygiene=_hygiene_in(data.get("hygiene"), where, warn),
        executor=_text(data.get("executor")),
        nodes=_nodes_in(data.get("nodes"), where, warn),
    )


def read_manifest(path: Path, warn: Warn) -> tuple[Manifest | None, Recipe | None]:
    """The manifest (None: there is none, or it does not read) and its recipe (None:
    none in it, or it does not load)."""
    file = path / layout.MANIFEST
    data = _json(file, warn)
    if data is None:
        return None, None
    if not isinstance(data, Mapping):
        warn(f"{file}: a JSON {type(data).__name__}, not a manifest; left out")
        return None, None
    manifest = _manifest_of(data, str(file), warn)
    if not manifest.recipe:
        warn(f"{file}: no recipe in it")
        return manifest, None
    try:
        return manifest, Recipe.model_validate(manifest.recipe)
    except ValueError as exc:
        warn(f"{file}: its recipe does not read back ({_first(exc)})")
        return manifest, None


def require_manifest(path: Path, hint: str) -> tuple[Manifest, Recipe]:
    """The manifest and its recipe, every leg record of it read; anything missing or
    damaged is a :class:`RunDirError` (``hint``: how to give a run that has one)."""
    file = path / layout.MANIFEST
    if not path.is_dir():
        raise RunDirError("no such run directory", where=str(path), hint=hint)
    try:
        data = atomic.read_json(file)
    except FileNotFoundError:
        raise RunDirError(
            f"no {layout.MANIFEST}: not a matrix run", where=str(path), hint=hint
        ) from None
    except (OSError, ValueError) as exc:
        raise RunDirError(f"unreadable ({_first(exc)})", where=str(file), hint=hint) from None
    if not isinstance(data, dict) or not isinstance(data.get("recipe"), dict):
        raise RunDirError("holds no recipe", where=str(file), hint=hint)

    try:
        recipe = Recipe.model_validate(data["recipe"])
    except ValueError as exc:
        raise RunDirError(
            f"its recipe does not load ({_first(exc)})",
            where=str(file),
            hint="the run was written by another vllmdiag; decide it with that one",
        ) from None
    listed = data.get("envs")
    for key, raw in (listed if isinstance(listed, Mapping) else {}).items():
        try:
            env_record(raw)
        except (TypeError, ValueError) as exc:
            raise RunDirError(
                f"leg record {key} unreadable ({_first(exc)})", where=str(file)
            ) from None
    # what a verdict does not need (hygiene, nodes) may be damaged: left out
    manifest = _manifest_of(data, str(file), lambda _: None)
    return manifest, recipe


def read_verdict(path: Path, warn: Warn) -> Verdict | None:
    file = path / layout.VERDICT
    data = _json(file, warn)
    if data is None:
        return None
    try:
        return codec.load(Verdict, data)
    except ValueError as exc:
        warn(f"{file}: not a verdict ({_first(exc)}); left out")
        return None
