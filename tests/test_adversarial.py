"""A hostile but realistic user against every command and every file kind it reads.

Each case builds its inputs in a temp dir, runs the real console entry point in a child
process (forked from this one, so imports are paid once) with a wall-clock limit and an
address-space limit, and passes only when the command ends in a clean error (non-zero
exit, an ``error:`` line, no traceback) or in the result the case names. A traceback, a
hang, a memory blow-up, a signal or a zero exit on nonsense fails the case.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"
RUN_FIXTURE = FIX / "report" / "thrmma-cpu"
TRACE_A = FIX / "traces" / "h200" / "eager"
TRACE_B = FIX / "traces" / "h200" / "graph"
TIME_LIMIT_S = 60.0
MEMORY_LIMIT = 3 << 30  # bytes of address space for the command (and what it starts)

Build = Callable[[Path], list[str]]


@dataclass(frozen=True)
class Outcome:
    rc: int
    out: str
    err: str
    seconds: float
    timed_out: bool


def run_cli(argv: list[str], cwd: Path, stdin: bytes = b"") -> Outcome:
    """``vllmdiag ARGV`` in a forked child: real fds, real exit status, bounded."""
    out_path, err_path, in_path = cwd / ".out", cwd / ".err", cwd / ".in"
    in_path.write_bytes(stdin)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.setsid()
            os.chdir(cwd)
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            for fd, path, flags in (
                (0, in_path, os.O_RDONLY),
                (1, out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                (2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            ):
                new = os.open(path, flags, 0o644)
                os.dup2(new, fd)
                os.close(new)
            sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.argv = ["vllmdiag", *argv]
            os.environ["COLUMNS"] = "120"
            from vllmdiag.cli.app import main

            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - reported as the traceback it is
            import traceback

            traceback.print_exc()
            code = 99
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > TIME_LIMIT_S:
            timed_out = True
            os.killpg(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.02)
    rc = os.waitstatus_to_exitcode(status)
    return Outcome(
        rc,
        out_path.read_text(errors="replace"),
        err_path.read_text(errors="replace"),
        time.monotonic() - start,
        timed_out,
    )


def judge(outcome: Outcome, expect: str) -> str | None:
    """None when the case passed, else why it failed."""
    text = outcome.out + outcome.err
    if outcome.timed_out:
        return f"hang: no end within {TIME_LIMIT_S:.0f} s"
    if "Traceback (most recent call last)" in text or "MemoryError" in text:
        return "traceback"
    if outcome.rc < 0:
        return f"killed by signal {-outcome.rc}"
    if expect == "any":
        return None
    if expect == "ok":
        return None if outcome.rc == 0 else f"exit {outcome.rc}, expected success"
    if outcome.rc == 0:
        return "exit 0 on nonsense"
    if outcome.rc not in (1, 2):
        return f"exit {outcome.rc}"
    if "--json" in expect:
        return None
    if not any(line.lstrip().lower().startswith(("error:", "error ")) for line in text.splitlines()):
        return "no 'error:' line"
    return None


# ----------------------------------------------------------------- hostile file contents

NUL = b"name: a\x00b\nlegs: {}\n"
CONTROL = b"name: \x1b]0;pwned\x07\x1b[2J\nquestion: \x9b31m\n"
NON_UTF8 = b"name: caf\xe9\xff\xfe\n"
DEEP_JSON = b"[" * 200_000 + b"]" * 200_000
DEEP_YAML = b"a: " + b"[" * 100_000 + b"]" * 100_000 + b"\n"
LAUGHS = (
    b'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    + b"".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n".encode()
        for i in range(8)
    )
)
UTF16_LOG = (
    "Traceback (most recent call last):\n"
    '  File "x.py", line 1, in <module>\n'
    "ModuleNotFoundError: No module named 'vllm._C'\n"
).encode("utf-16")


def _write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _fifo(tmp: Path, name: str) -> Path:
    path = tmp / name
    os.mkfifo(path)
    return path


def _sparse(tmp: Path, name: str, size: int, head: bytes = b"") -> Path:
    """A file of SIZE bytes that takes no disk: HEAD, then zeros."""
    path = tmp / name
    with path.open("wb") as fh:
        fh.write(head)
        fh.truncate(size)
    return path


def _long_line(tmp: Path, name: str, size: int = 80 << 20) -> Path:
    path = tmp / name
    with path.open("wb") as fh:
        chunk = b"x" * (1 << 20)
        for _ in range(size >> 20):
            fh.write(chunk)
    return path


def _gzip_bomb(tmp: Path, name: str, size: int = 300 << 20) -> Path:
    path = tmp / name
    with gzip.open(path, "wb", compresslevel=1) as fh:
        chunk = b"\n" * (1 << 20)
        for _ in range(size >> 20):
            fh.write(chunk)
    return path


def _truncated_gzip(tmp: Path, name: str) -> Path:
    data = gzip.compress(b"INFO start\n" * 5000 + UTF16_LOG.decode("utf-16").encode())
    return _write(tmp, name, data[: len(data) // 2])


def _symlink_loop(tmp: Path, name: str) -> Path:
    path = tmp / name
    os.symlink(path, path)
    return path


def _copy_run(tmp: Path, name: str = "run") -> Path:
    import shutil

    dst = tmp / name
    shutil.copytree(RUN_FIXTURE, dst, symlinks=True)
    return dst


def _first_cell(run: Path) -> Path:
    return sorted((run / "cells").iterdir())[0]


def _recipe(tmp: Path, body: str, name: str = "r.yaml") -> Path:
    return _write(tmp, name, body.encode())


GOOD_RECIPE = """\
name: adv
legs:
  a:
    requirements: [six]
baseline:
  leg: a
workloads:
  w:
    command: ["{python}", "-c", "print(1)"]
arms: []
repeats: 1
timeout: 30
gpus: 0
"""


def _sqlite_garbage(tmp: Path) -> Path:
    return _write(tmp, "t/report.sqlite", b"SQLite format 3\x00" + os.urandom(4000))


def _sqlite_wrong_schema(tmp: Path) -> Path:
    path = tmp / "w" / "report.sqlite"
    path.parent.mkdir()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (x TEXT)")
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('a')")
    return path


def _kineto(events: object) -> bytes:
    return json.dumps({"traceEvents": events}).encode()


def _trace_dir(tmp: Path, name: str, data: bytes, file: str = "trace.json") -> Path:
    path = tmp / name
    path.mkdir(parents=True)
    (path / file).write_bytes(data)
    return path


def _study_dir(tmp: Path, files: dict[str, bytes]) -> Path:
    root = tmp / "study"
    root.mkdir()
    for rel, data in files.items():
        _write(root, rel, data)
    return root


# -------------------------------------------------------------------------------- cases

FILE_KINDS: dict[str, Callable[[Path], str]] = {
    "missing": lambda t: str(t / "nope"),
    "empty": lambda t: str(_write(t, "empty.x", b"")),
    "directory": lambda t: str((t / "adir").mkdir() or t / "adir"),
    "fifo": lambda t: str(_fifo(t, "fifo")),
    "dev-zero": lambda t: "/dev/zero",
    "dev-null": lambda t: "/dev/null",
    "proc-mem": lambda t: "/proc/self/mem",
    "nul": lambda t: str(_write(t, "nul.x", NUL)),
    "control": lambda t: str(_write(t, "ctl.x", CONTROL)),
    "non-utf8": lambda t: str(_write(t, "latin.x", NON_UTF8)),
    "long-component": lambda t: str(t / ("a" * 300)),
    "newline-name": lambda t: str(_write(t, "a\nb.x", b"x\n")),
    "symlink-loop": lambda t: str(_symlink_loop(t, "loop")),
    "sparse-huge": lambda t: str(_sparse(t, "huge.x", 4 << 30)),
    "deep-json": lambda t: str(_write(t, "deep.json", DEEP_JSON)),
    "deep-yaml": lambda t: str(_write(t, "deep.yaml", DEEP_YAML)),
    "laughs": lambda t: str(_write(t, "laughs.yaml", LAUGHS)),
}


def _file_cases(prefix: str, argv: Callable[[str], list[str]], kinds: list[str]) -> list[tuple[str, Build, str]]:
    return [
        (f"{prefix}-{kind}", (lambda t, k=kind: argv(FILE_KINDS[k](t))), "error")
        for kind in kinds
    ]


ALL_KINDS = list(FILE_KINDS)
CASES: list[tuple[str, Build, str]] = []

# Every command's main file argument, every hostile file kind.
for _cmd, _argv in {
    "matrix": lambda p: ["matrix", p, "--dry-run"],
    "matrix-verdict": lambda p: ["matrix", "verdict", p],
    "leg-show": lambda p: ["leg", "show", p],
    "leg-build": lambda p: ["leg", "build", p],
    "doctor": lambda p: ["doctor", p, "--no-gpu"],
    "study": lambda p: ["study", p, "--dry-run"],
    "study-tables": lambda p: ["study", "tables", p],
    "fingerprint": lambda p: ["fingerprint", p],
    "fingerprint-diff": lambda p: ["fingerprint", "diff", p, p],
    "profile-diff": lambda p: ["profile", "diff", p, str(TRACE_B)],
    "compare": lambda p: ["compare", p, str(FIX / "tables" / "h200.tsv")],
    "report": lambda p: ["report", p],
    "report-window": lambda p: ["report", str(RUN_FIXTURE), "--window", p],
    "report-bisect": lambda p: ["report", str(RUN_FIXTURE), "--bisect", p],
    "report-profile": lambda p: ["report", str(RUN_FIXTURE), "--profile", p],
    "triage-catalogue": lambda p: ["triage", str(FIX / "logs" / "segfault.log"), "--catalogue", p],
    "matrix-resume": lambda p: ["matrix", str(REPO / "recipes" / "thrmma-cpu.yaml"), "--resume", p],
}.items():
    CASES += _file_cases(_cmd, _argv, ALL_KINDS)

# triage reads any text: empty, NUL, control and non-UTF-8 logs have a result (no cause).
CASES += _file_cases(
    "triage",
    lambda p: ["triage", p],
    ["missing", "directory", "proc-mem", "long-component", "symlink-loop", "dev-zero", "fifo"],
)
CASES += [
    (f"triage-{k}", (lambda t, k=k: ["triage", FILE_KINDS[k](t)]), "any")
    for k in ["empty", "nul", "control", "non-utf8", "deep-json", "laughs", "newline-name"]
]


@pytest.mark.parametrize(("build", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input_ends_cleanly(build: Build, expect: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    argv = build(work)
    outcome = run_cli(argv, work)
    why = judge(outcome, expect)
    assert why is None, f"{why}: vllmdiag {argv!r}\n--- stdout\n{outcome.out[-3000:]}\n--- stderr\n{outcome.err[-3000:]}"
