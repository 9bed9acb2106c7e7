"""The run directory: an append-only, schema-versioned ``run.jsonl`` plus one atomically
written ``result.json`` per finished cell, so a run killed at any instant loses nothing
that had finished and can be resumed.

The journal is a subscriber: :class:`JournalSink` is an observer of a job's typed events
and writes each one (but progress ticks) as a record named after its type
(``CellFinished`` → ``cell_finished``), through :mod:`vllmdiag.codec`. The live view
subscribes to the same events, so what a user watched and what the journal says cannot
drift apart. Runs journaled by the previous schema (1) are still read and resumed.

Everything written here goes through :mod:`vllmdiag.services.redact` (no secret lands in a run
directory). A line or result file that cannot be read (torn by a crash, damaged by
hand) is skipped with a warning, never fatal and never misread; a directory that cannot
be written (a file in the way, no permission, a full disk) stops the run with a
:class:`RunDirError` that says how to resume it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vllmdiag import codec
from vllmdiag.errors import RunDirError, VllmdiagError
from vllmdiag.model.fingerprint import Fingerprint
from vllmdiag.model.outcome import CauseSummary, CellResult
from vllmdiag.printable import printable
from vllmdiag.services import atomic, redact

SCHEMA = 2
#: Journals this vllmdiag reads and resumes (1: results with hand-written keys).
READABLE = (1, 2)
EVENTS = "run.jsonl"
# The files of the recipe's folder that cells' commands ran (a workload's scripts), as they
# were when the cell ran: a report drafted on another machine writes them out from here.
RECIPE_FILES = "recipe"
RECIPE_FILE_MAX_BYTES = 1024 * 1024
#: Salted digests of the values the run knew to be secret (never the values: see
#: :func:`vllmdiag.services.redact.digests`), so that whatever reads the run back masks them.
SECRET_DIGESTS = "secrets.sha256"
#: Below this much free space a cell's log may have been cut short: its outcome is not
#: recorded (a full disk is the tool's problem, never the cell's verdict).
MIN_FREE_BYTES = 1024 * 1024
_FULL = (errno.ENOSPC, errno.EDQUOT)

Warn = Callable[[str], None]


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def learn_secrets_near(path: Path, depth: int = 4) -> None:
    """Mask what the run holding ``path`` (a cell's log, a run directory) knew to be
    secret, in everything shown of it: the nearest folder at or above it, ``depth``
    levels up at most, that keeps :data:`SECRET_DIGESTS`."""
    here = path if path.is_dir() else path.parent
    for folder in [here, *here.parents][: depth + 1]:
        try:
            lines = (folder / SECRET_DIGESTS).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        redact.learn_digests(lines[:10_000])
        return


class RunDir:
    """``command``: the vllmdiag command that runs (and resumes) this kind of run, for the
    hints a stopped run prints."""

    def __init__(self, path: Path, warn: Warn | None = None, command: str = "matrix") -> None:
        self.path = path
        self.warnings: list[str] = []
        self._warn = warn
        self.command = command
        self.source: str | None = None  # the recipe, for the resume hint
        self._learn_secrets()

    def _learn_secrets(self) -> None:
        """Mask what this run knew to be secret in everything read back from it (logs
        echo their argv and environment)."""
        try:
            lines = (self.path / SECRET_DIGESTS).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return
        redact.learn_digests(lines[:10_000])

    def keep_secret_digests(self) -> None:
        """Write (merged with those of earlier starts) the digests of every value this
        process knows to be secret."""
        file = self.path / SECRET_DIGESTS
        try:
            earlier = file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            earlier = []
        salt = redact.salt_of(earlier) or redact.new_salt()
        lines = sorted({*earlier, *redact.digests(salt)})
        if lines != sorted(earlier):
            with self._writing(file, f"write {SECRET_DIGESTS}"):
                atomic.write_text(file, "\n".join(lines) + "\n")

    def warn(self, text: str) -> None:
        self.warnings.append(text)
        if self._warn is not None:
            self._warn(text)

    @classmethod
    def create(
        cls,
        recipe_name: str,
        *,
        out: Path | None,
        runs_root: Path,
        warn: Warn | None = None,
        command: str = "matrix",
    ) -> RunDir:
        if out is None:
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            out = runs_root / f"{recipe_name}-{stamp}"
        run = cls(out, warn, command)
        with run._writing(out, "create the run directory"):
            if out.exists() and not out.is_dir():
                raise RunDirError(
                    "the run directory is an existing file",
                    where=str(out),
                    hint="give --out (or --runs-root) a directory path, new or existing",
                )
            if (out / EVENTS).exists():
                raise RunDirError(
                    "this run directory already holds a run",
                    where=str(out),
                    hint=f"resume it with --resume {out}, or choose another --out",
                )
            out.mkdir(parents=True, exist_ok=True)
        run._probe_writable()
        return run

    @classmethod
    def resume(
        cls, path: Path, recipe_name: str, warn: Warn | None = None, command: str = "matrix"
    ) -> RunDir:
        events = path / EVENTS
        try:
            mode = events.stat().st_mode
        except OSError:
            mode = 0
        if not stat.S_ISREG(mode):
            raise RunDirError(
                "not a vllmdiag run directory (no run.jsonl)",
                where=str(path),
                hint=f"give the directory a previous 'vllmdiag {command}' printed",
            )
        run = cls(path, warn, command)
        for i, ev in run._numbered_events():
            if ev.get("schema") not in READABLE:
                raise VllmdiagError(
                    f"run.jsonl schema {ev.get('schema')!r}; this vllmdiag reads "
                    + ", ".join(map(str, READABLE)),
                    where=f"{events}:{i}",
                    hint="resume it with the vllmdiag version that started it",
                )
            if ev.get("event") == "run_started" and ev.get("recipe") != recipe_name:
                raise VllmdiagError(
                    f"this run is of recipe {ev.get('recipe')!r}, not {recipe_name!r}",
                    where=str(path),
                    hint="resume a run with the recipe that started it",
                )
        run._probe_writable()
        return run

    def events(self) -> list[dict[str, Any]]:
        return [ev for _, ev in self._numbered_events()]

    def _numbered_events(self) -> Iterator[tuple[int, dict[str, Any]]]:
        file = self.path / EVENTS
        with self._reading(file), open(file, "rb") as fh:
            for i, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    ev = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    self.warn(f"{file}:{i}: not UTF-8; line skipped")
                    continue
                except (ValueError, RecursionError):
                    self.warn(f"{file}:{i}: not JSON (torn by a crash?); line skipped")
                    continue
                if not isinstance(ev, dict):
                    self.warn(f"{file}:{i}: a JSON {type(ev).__name__}, not an event; skipped")
                    continue
                yield i, ev

    def event(self, name: str, /, **fields: Any) -> None:
        """Append one record (``fields`` may not use the record's own keys)."""
        if name == "run_started" and fields.get("source"):
            self.source = str(fields["source"])
        record = {**redact.data(fields), "schema": SCHEMA, "event": name, "ts": utc_now()}
        file = self.path / EVENTS
        with self._writing(file, "append to the run journal"):
            atomic.append_jsonl(file, record)

    def cell_dir(self, cell_id: str) -> Path:
        if not cell_id or "/" in cell_id or cell_id in (".", "..") or "\x00" in cell_id:
            raise VllmdiagError(f"cell id {cell_id!r} cannot name a directory")
        path = self.path / "cells" / cell_id
        for part in (path.parent, path):  # a tampered run dir must not redirect writes
            if _is_link(part):
                raise RunDirError(
                    f"{part.name} in the run directory is a symlink (to "
                    f"{os.readlink(part)!r}); vllmdiag writes only inside the run directory",
                    where=str(part),
                    hint="remove the link (rm, not rm -r) and resume, or start a new run",
                )
        return path

    def log_path(self, cell_id: str) -> Path:
        return self.cell_dir(cell_id) / "log.txt"

    def out_dir(self, cell_id: str) -> Path:
        return self.cell_dir(cell_id) / "out"

    def prepare_cell(self, cell_id: str) -> None:
        """A fresh attempt: keep the previous attempt's log (and stack dumps) beside it,
        never mix them."""
        log = self.log_path(cell_id)
        with self._writing(log.parent, "prepare the cell directory"):
            if log.exists():
                os.replace(log, log.with_name("log.previous.txt"))
            hang = log.with_name("hang")
            if hang.is_dir():
                shutil.rmtree(log.with_name("hang.previous"), ignore_errors=True)
                os.replace(hang, log.with_name("hang.previous"))
            self.out_dir(cell_id).mkdir(parents=True, exist_ok=True)

    def write_result(self, result: CellResult) -> None:
        file = self.cell_dir(result.id) / "result.json"
        free = _free_bytes(self.path)
        if free is not None and free < MIN_FREE_BYTES:
            raise self._error(
                file,
                OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
                f"record cell {result.id} ({free // 1024} KiB free: its log may be cut "
                "short, so its outcome is not trusted)",
            )
        data = codec.dump(dataclasses.replace(result, log=_relative(result.log, self.path)))
        with self._writing(file, f"record cell {result.id}"):
            atomic.write_json(file, redact.data({"schema": SCHEMA, **data}))

    def finished(self) -> dict[str, CellResult]:
        """Every cell's result that can be trusted. A result that cannot (unreadable, of
        a schema this vllmdiag does not know, behind a symlink, or disagreeing with the
        journal's record of the cell: edited by hand) is skipped with a warning, and the
        cell runs again."""
        out: dict[str, CellResult] = {}
        cells = self.path / "cells"
        if _is_link(cells):
            self.warn(f"{cells}: a symlink, not the run's own directory; no result is reused")
            return out
        journaled = self._journaled()
        for file in sorted(cells.glob("*/result.json")):
            if _is_link(file.parent) or _is_link(file):
                link = file.parent if _is_link(file.parent) else file
                self.warn(f"{link}: a symlink in the run directory; ignored, the cell runs again")
                continue
            try:
                data = atomic.read_json(file, follow=False)
            except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
                self.warn(f"{file}: unreadable ({exc}); the cell runs again")
                continue
            if not isinstance(data, dict):
                self.warn(f"{file}: a JSON {type(data).__name__}, not a result; runs again")
                continue
            if data.get("schema", 1) not in READABLE:
                self.warn(
                    f"{file}: result schema {data.get('schema')!r}; this vllmdiag reads "
                    + ", ".join(map(str, READABLE))
                    + "; the cell runs again"
                )
                continue
            try:
                res = load_result(data)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                first = str(exc).splitlines()[0]
                self.warn(f"{file}: not a cell result ({first}); the cell runs again")
                continue
            if res.id != file.parent.name:
                self.warn(f"{file}: holds cell {res.id!r}, not {file.parent.name!r}; ignored")
                continue
            said = journaled.get(res.id)
            if said is not None and said != (res.outcome.value, res.reuse_key):
                self.warn(
                    f"{file}: says {res.outcome.value}, but the journal recorded "
                    f"{said[0]} for this cell (edited since?); the cell runs again"
                )
                continue
            if res.log and not Path(res.log).is_absolute():
                res = dataclasses.replace(res, log=str(self.path / res.log))
            out[res.id] = res
        return out

    def _journaled(self) -> dict[str, tuple[str, str]]:
        """(outcome, reuse key) of each cell's last recorded result in the journal."""
        said: dict[str, tuple[str, str]] = {}
        if not (self.path / EVENTS).is_file():
            return said
        for ev in self.events():
            result = ev.get("result")
            if ev.get("event") in ("cell_finished", "cell_reused") and isinstance(result, dict):
                cid, outcome, key = result.get("id"), result.get("outcome"), result.get("reuse_key")
                if isinstance(cid, str) and isinstance(outcome, str) and isinstance(key, str):
                    said[cid] = (outcome, key)
        return said

    def keep_recipe_files(self, recipe_dir: Path, argv: Sequence[str]) -> None:
        """Copy into ``recipe/`` each regular UTF-8 file of at most 1 MiB inside
        ``recipe_dir`` that ``argv`` names, once (the first cell's copy stands), with the
        values the run knows to be secret masked as everywhere in the run directory."""
        try:
            root = recipe_dir.resolve()
        except OSError:
            return
        for token in argv:
            if not token.startswith("/"):
                continue
            try:
                source = Path(token).resolve()
                rel = source.relative_to(root)
                info = source.stat()
            except (OSError, ValueError):
                continue
            keep = self.path / RECIPE_FILES / rel
            if keep.exists() or not stat.S_ISREG(info.st_mode):
                continue
            if info.st_size > RECIPE_FILE_MAX_BYTES:
                continue
            try:
                text = source.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            with self._writing(keep, f"keep {rel}"):
                keep.parent.mkdir(parents=True, exist_ok=True)
                atomic.write_text(keep, redact.text(text))  # secrets masked, code kept

    def write_json(self, name: str, obj: Any) -> None:
        file = self.path / name
        with self._writing(file, f"write {name}"):
            atomic.write_json(file, redact.data(obj))

    def write_text(self, name: str, text: str) -> None:
        file = self.path / name
        with self._writing(file, f"write {name}"):
            atomic.write_text(file, printable(redact.text(text)))

    def _probe_writable(self) -> None:
        with self._writing(self.path, "write in the run directory"):
            fd, tmp = tempfile.mkstemp(prefix=".probe.", dir=self.path)
            os.close(fd)
            os.unlink(tmp)

    @contextlib.contextmanager
    def _reading(self, file: Path) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise RunDirError(
                f"cannot read {file.name}: {exc.strerror}",
                where=str(file),
                hint="check the path and its permissions",
            ) from None

    @contextlib.contextmanager
    def _writing(self, file: Path, what: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise self._error(file, exc, what) from None

    def _error(self, file: Path, exc: OSError, what: str) -> RunDirError:
        recipe = self.source or "RECIPE"
        resume = f"vllmdiag {self.command} {recipe} --resume {self.path}"
        if exc.errno in _FULL:
            return RunDirError(
                f"the disk is full: cannot {what}",
                where=str(file),
                hint=f"every cell that finished is intact; free some space, then: {resume}",
            )
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            problem = "is read-only" if exc.errno == errno.EROFS else "is not writable"
            return RunDirError(
                f"the run directory {problem}: cannot {what}",
                where=str(file),
                hint="choose a writable place with --out or --runs-root"
                + (f", or make it writable and resume: {resume}" if self.source else ""),
            )
        if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
            return RunDirError(
                f"cannot {what}: a file is in the way ({exc.strerror})",
                where=str(exc.filename or file),
                hint="give --out (or --runs-root) a directory path, new or existing",
            )
        return RunDirError(
            f"cannot {what}: {exc.strerror or exc}",
            where=str(file),
            hint="choose a place you can write with --out or --runs-root"
            + (f", or fix it and resume: {resume}" if self.source else ""),
        )


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def load_result(data: Mapping[str, Any]) -> CellResult:
    """A ``result.json`` back as a :class:`CellResult`, whichever schema wrote it."""
    if data.get("schema", 1) == 1:
        return _legacy_result(data)
    return codec.load(CellResult, data)


def _legacy_result(data: Mapping[str, Any]) -> CellResult:
    """Schema 1 named the resume key ``fingerprint``, the run's fingerprint
    ``run_fingerprint``, and kept the root cause as a free-form object."""
    new = {k: v for k, v in data.items() if k not in ("fingerprint", "run_fingerprint")}
    new["reuse_key"] = data.get("fingerprint", "")
    facts = data.get("run_fingerprint")
    fp = None
    if isinstance(facts, Mapping) and "reader_error" not in facts:
        derived = ("startup_dominant",)  # shaped differently then; derived, so dropped
        kept = {k: v for k, v in facts.items() if k not in derived}
        fp = codec.dump(codec.load(Fingerprint, kept))
    new["fingerprint"] = fp
    cause = data.get("root_cause")
    new["root_cause"] = (
        codec.dump(codec.load(CauseSummary, cause)) if isinstance(cause, Mapping) else None
    )
    return codec.load(CellResult, new)


class JournalSink:
    """An observer that journals a job's events: each event value becomes one record,
    named after its type, its fields written through the codec. Event types that set
    ``journaled = False`` (progress ticks) are left out."""

    def __init__(self, run: RunDir) -> None:
        self.run = run

    def __call__(self, event: object) -> None:
        if not dataclasses.is_dataclass(event) or not getattr(event, "journaled", True):
            return
        fields = codec.dump(event)
        self.run.event(record_name(type(event)), **fields)


def record_name(cls: type) -> str:
    """``CellFinished`` → ``cell_finished``: the journal's name for an event type."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


def _free_bytes(path: Path) -> int | None:
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def _relative(path: str, base: Path) -> str:
    """A cell's log path as written in its result: relative to the run directory."""
    if not path:
        return path
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except ValueError:
        return path


def host() -> str:
    return socket.gethostname()
