"""The run directory's one writer: an append-only, schema-versioned journal plus one
atomically written result per finished cell, so a run killed at any instant loses
nothing that had finished and can be resumed; and the manifest, the legs' records, the
verdict and summaries, the recipe files its cells ran.

The journal is a subscriber: :class:`JournalSink` is an observer of a job's typed events
and writes each one (but progress ticks) as a record named after its type
(``CellFinished`` → ``cell_finished``), through :mod:`vllmdiag.codec`. The live view
subscribes to the same events, so what a user watched and what the journal says cannot
drift apart.

Everything written here goes through :mod:`vllmdiag.services.redact` (no secret lands in
a run directory). A directory that cannot be written (a file in the way, no permission,
a full disk) stops the run with a :class:`RunDirError` that says how to resume it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vllmdiag import codec
from vllmdiag.errors import RunDirError, VllmdiagError
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.stack import EnvRecord
from vllmdiag.model.verdict import Verdict
from vllmdiag.printable import printable
from vllmdiag.services import atomic, redact
from vllmdiag.spine.rundir import layout, reader, secrets
from vllmdiag.spine.rundir.migrate import READABLE, SCHEMA
from vllmdiag.spine.rundir.records import JournalEntry, Manifest, RunRecord

RECIPE_FILE_MAX_BYTES = 1024 * 1024
#: Below this much free space a cell's log may have been cut short: its outcome is not
#: recorded (a full disk is the tool's problem, never the cell's verdict).
MIN_FREE_BYTES = 1024 * 1024
_FULL = (errno.ENOSPC, errno.EDQUOT)

Warn = Callable[[str], None]


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def host() -> str:
    return socket.gethostname()


class RunDir:
    """``command``: the vllmdiag command that runs (and resumes) this kind of run, for the
    hints a stopped run prints."""

    def __init__(self, path: Path, warn: Warn | None = None, command: str = "matrix") -> None:
        self.path = path
        self.warnings: list[str] = []
        self._warn = warn
        self.command = command
        self.source: str | None = None  # the recipe, for the resume hint
        secrets.learn(path)

    def keep_secret_digests(self) -> None:
        """Write (merged with those of earlier starts) the digests of every value this
        process knows to be secret."""
        file = self.path / layout.SECRET_DIGESTS
        with self._writing(file, f"write {layout.SECRET_DIGESTS}"):
            secrets.keep(self.path)

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
            if layout.journal_exists(out):
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
        events = path / layout.EVENTS
        try:
            mode = events.stat().st_mode
        except OSError:
            mode = 0
        if not stat.S_ISREG(mode):
            raise RunDirError(
                f"not a vllmdiag run directory (no {layout.EVENTS})",
                where=str(path),
                hint=f"give the directory a previous 'vllmdiag {command}' printed",
            )
        run = cls(path, warn, command)
        for ev in run.journal():
            if ev.schema not in READABLE:
                raise VllmdiagError(
                    f"{layout.EVENTS} schema {ev.schema!r}; this vllmdiag reads "
                    + ", ".join(map(str, READABLE)),
                    where=f"{events}:{ev.line}",
                    hint="resume it with the vllmdiag version that started it",
                )
            if ev.event == "run_started" and ev.fields.get("recipe") != recipe_name:
                raise VllmdiagError(
                    f"this run is of recipe {ev.fields.get('recipe')!r}, not {recipe_name!r}",
                    where=str(path),
                    hint="resume a run with the recipe that started it",
                )
        run._probe_writable()
        return run

    # -- reading back what this run wrote ---------------------------------------------

    def journal(self) -> tuple[JournalEntry, ...]:
        return reader.read_journal(self.path, self.warn)

    def record(self) -> RunRecord:
        """The whole run as written so far."""
        return reader.read_run(self.path, self.warn)

    def finished(self) -> dict[str, CellResult]:
        """Every cell's result that can be trusted (see :func:`reader.read_results`)."""
        said = {i: j.recorded for i, j in reader.cell_journals(self.journal()).items()}
        return reader.read_results(self.path, self.warn, said)

    # -- the journal ------------------------------------------------------------------

    def event(self, name: str, /, **fields: Any) -> None:
        """Append one record (``fields`` may not use the record's own keys)."""
        if name == "run_started" and fields.get("source"):
            self.source = str(fields["source"])
        record = {**redact.data(fields), "schema": SCHEMA, "event": name, "ts": utc_now()}
        file = self.path / layout.EVENTS
        with self._writing(file, "append to the run journal"):
            atomic.append_jsonl(file, record)

    # -- cells ------------------------------------------------------------------------

    def cell_dir(self, cell_id: str) -> Path:
        if not cell_id or "/" in cell_id or cell_id in (".", "..") or "\x00" in cell_id:
            raise VllmdiagError(f"cell id {cell_id!r} cannot name a directory")
        path = layout.cell_dir(self.path, cell_id)
        for part in (path.parent, path):  # a tampered run dir must not redirect writes
            if layout.is_link(part):
                raise RunDirError(
                    f"{part.name} in the run directory is a symlink (to "
                    f"{os.readlink(part)!r}); vllmdiag writes only inside the run directory",
                    where=str(part),
                    hint="remove the link (rm, not rm -r) and resume, or start a new run",
                )
        return path

    def log_path(self, cell_id: str) -> Path:
        return self.cell_dir(cell_id) / layout.LOG

    def out_dir(self, cell_id: str) -> Path:
        return self.cell_dir(cell_id) / layout.OUT

    def prepare_cell(self, cell_id: str) -> None:
        """A fresh attempt: keep the previous attempt's log (and stack dumps) beside it,
        never mix them."""
        log = self.log_path(cell_id)
        with self._writing(log.parent, "prepare the cell directory"):
            if log.exists():
                os.replace(log, log.with_name(layout.PREVIOUS_LOG))
            hang = log.with_name(layout.HANG)
            if hang.is_dir():
                shutil.rmtree(log.with_name(layout.PREVIOUS_HANG), ignore_errors=True)
                os.replace(hang, log.with_name(layout.PREVIOUS_HANG))
            self.out_dir(cell_id).mkdir(parents=True, exist_ok=True)

    def write_result(self, result: CellResult) -> None:
        file = self.cell_dir(result.id) / layout.RESULT
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
            keep = layout.kept_recipe_file(self.path, rel)
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

    # -- the legs, the manifest, the verdict ------------------------------------------

    def env_log(self, key: str, node: str = "") -> Path:
        """Where a leg's build log goes (``node``: a cluster node's label)."""
        return layout.env_log(self.path, key, node)

    def write_env(self, record: EnvRecord, node: str = "") -> None:
        self._write_json(layout.env_file(self.path, record.key, node), codec.dump(record))

    def write_manifest(self, manifest: Manifest) -> None:
        data = codec.dump(manifest)
        if manifest.nodes is None:  # a run on this machine alone names no nodes
            del data["nodes"]
        self._write_json(self.manifest_path, data)

    @property
    def manifest_path(self) -> Path:
        return self.path / layout.MANIFEST

    def write_verdict(self, verdict: Verdict) -> None:
        """``verdict.json``, shareable (no secret, home path, host or user name)."""
        data = redact.shareable_data(codec.dump(verdict))
        self._write_json(self.path / layout.VERDICT, data)

    def write_summaries(self, markdown: str, text: str) -> None:
        """``summary.md`` and ``summary.txt``, shareable."""
        self._write_text(layout.SUMMARY_MD, redact.shareable(markdown))
        self._write_text(layout.SUMMARY_TXT, redact.shareable(text))

    def _write_json(self, file: Path, obj: Any) -> None:
        name = file.relative_to(self.path)
        with self._writing(file, f"write {name}"):
            atomic.write_json(file, redact.data(obj))

    def _write_text(self, name: str, text: str) -> None:
        file = self.path / name
        with self._writing(file, f"write {name}"):
            atomic.write_text(file, printable(redact.text(text)))

    # -- errors -----------------------------------------------------------------------

    def _probe_writable(self) -> None:
        with self._writing(self.path, "write in the run directory"):
            fd, tmp = tempfile.mkstemp(prefix=".probe.", dir=self.path)
            os.close(fd)
            os.unlink(tmp)

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
