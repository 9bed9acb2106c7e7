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

import vllmdiag.cli.app  # noqa: F401 - imported once here, so every forked case starts fast
from tests.support.paths import REPO

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
        except BaseException:
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
    # vllmdiag's own traceback: a frame of its package or of the CLI stack. (Reports and
    # triage quote the tracebacks of the logs they read: those are data, not failures.)
    own = (f'File "{REPO / "vllmdiag"}', "/typer/", "/click/", "MemoryError")
    if outcome.rc in (3, 99) or any(frame in text for frame in own):
        return "traceback"
    if "\x1b" in text or "\x07" in text or "\x9b" in text:  # inputs plant them; never shown raw
        return "a raw terminal escape reached the output"
    if outcome.rc < 0:
        return f"killed by signal {-outcome.rc}"
    if expect == "any":
        return None
    if expect == "any-nonzero":  # a clean refusal or a clean result: never silent nonsense
        return None
    if expect == "fails":
        return None if outcome.rc != 0 else "exit 0 on nonsense"
    if expect == "ok":
        return None if outcome.rc == 0 else f"exit {outcome.rc}, expected success"
    if outcome.rc == 0:
        return "exit 0 on nonsense"
    if outcome.rc not in (1, 2):
        return f"exit {outcome.rc}"
    if "--json" in expect:
        return None
    if not any(
        line.lstrip().lower().startswith(("error:", "error ")) for line in text.splitlines()
    ):
        return "no 'error:' line"
    return None


# ----------------------------------------------------------------- hostile file contents

NUL = b"name: a\x00b\nlegs: {}\n"
CONTROL = b"name: \x1b]0;pwned\x07\x1b[2J\nquestion: \x9b31m\n"
NON_UTF8 = b"name: caf\xe9\xff\xfe\n"
DEEP_JSON = b"[" * 200_000 + b"]" * 200_000
DEEP_YAML = b"a: " + b"[" * 100_000 + b"]" * 100_000 + b"\n"
LAUGHS = b'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n".encode()
    for i in range(8)
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


def _long_line(tmp: Path, name: str, size: int = 16 << 20) -> Path:
    path = tmp / name
    with path.open("wb") as fh:
        chunk = b"x" * (1 << 20)
        for _ in range(size >> 20):
            fh.write(chunk)
    return path


def _gzip_bomb(tmp: Path, name: str, size: int = 64 << 20) -> Path:
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
question: does six import?
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
    "sparse-huge": lambda t: str(_sparse(t, "huge.x", 96 << 20)),
    "deep-json": lambda t: str(_write(t, "deep.json", DEEP_JSON)),
    "deep-yaml": lambda t: str(_write(t, "deep.yaml", DEEP_YAML)),
    "laughs": lambda t: str(_write(t, "laughs.yaml", LAUGHS)),
}


def _file_cases(
    prefix: str, argv: Callable[[str], list[str]], kinds: list[str]
) -> list[tuple[str, Build, str]]:
    return [
        (f"{prefix}-{kind}", (lambda t, k=kind: argv(FILE_KINDS[k](t))), "error") for kind in kinds
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

# fingerprint reads any text: a file that is not a vLLM log has every field unknown ("-"),
# the right result (a diff calls such fields "missing"). doctor on a directory that is
# not a venv reports the leg NOT CHECKED and exits 1.
_TEXT_KINDS = {
    "sparse-huge",
    "empty",
    "nul",
    "control",
    "non-utf8",
    "newline-name",
    "deep-json",
    "deep-yaml",
    "laughs",
}
CASES = [
    (
        name,
        build,
        "any"
        if name.split("-", 1)[0] == "fingerprint"
        and name.rsplit("-", 1)[-1] in {k.rsplit("-", 1)[-1] for k in _TEXT_KINDS}
        and any(name.endswith(k) for k in _TEXT_KINDS)
        else "fails"
        if name == "doctor-directory"
        else expect,
    )
    for name, build, expect in CASES
]

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


# ---------------------------------------------------------------- recipe contents


def _recipe_case(body: str) -> Build:
    return lambda t: ["matrix", str(_recipe(t, body)), "--dry-run"]


def _swap(old: str, new: str) -> str:
    assert old in GOOD_RECIPE
    return GOOD_RECIPE.replace(old, new)


RECIPES = {
    "good": (GOOD_RECIPE, "ok"),
    "bad-date": (
        _swap("    requirements: [six]", "    requirements: [six]\n    exclude_newer: 2026-02-30"),
        "error",
    ),
    "bang-int": (_swap("repeats: 1", "repeats: !!int abc"), "error"),
    "bang-float": (_swap("timeout: 30", "timeout: !!float abc"), "error"),
    "huge-int": (_swap("repeats: 1", "repeats: " + "9" * 5000), "error"),
    "repeats-bool": (_swap("repeats: 1", "repeats: true"), "error"),
    "timeout-nan": (_swap("timeout: 30", "timeout: .nan"), "error"),
    "timeout-inf": (_swap("timeout: 30", "timeout: .inf"), "error"),
    "timeout-negative": (_swap("timeout: 30", "timeout: -5"), "error"),
    "gpus-huge": (_swap("gpus: 0", "gpus: 99999999999"), "error"),
    "no-workloads": (
        _swap('  w:\n    command: ["{python}", "-c", "print(1)"]\n', "  {}\n"),
        "error",
    ),
    "null-workload-key": (_swap("  w:\n", "  ~:\n"), "error"),
    "empty-command": (_swap('command: ["{python}", "-c", "print(1)"]', "command: []"), "error"),
    "command-not-list": (_swap('command: ["{python}", "-c", "print(1)"]', "command: 5"), "error"),
    "bad-template": (_swap('"{python}", "-c"', '"{python.nosuch}", "-c"'), "error"),
    "unclosed-template": (_swap('"{python}", "-c"', '"{python", "-c"'), "error"),
    "long-arm-name": (
        _swap("arms: []", "arms:\n  - name: " + "a" * 5000 + "\n    env: {A: '1'}"),
        "error",
    ),
    "arm-shell-env": (
        _swap("arms: []", "arms:\n  - name: x\n    env: {'X;touch /tmp/p;Y': '1'}"),
        "error",
    ),
    "unknown-arm": (_swap("arms: []", "arms: [no-such-arm-anywhere]"), "error"),
    "unknown-key": (GOOD_RECIPE + "surprise: 1\n", "error"),
    "duplicate-key": (GOOD_RECIPE + "repeats: 2\n", "error"),
    "tab-indent": (GOOD_RECIPE.replace("  a:\n    requirements", "  a:\n\trequirements"), "error"),
    "list-root": ("- a\n- b\n", "error"),
    "scalar-root": ("just text\n", "error"),
    "recursive-alias": ("name: &a [*a]\n", "error"),
    "laughs": (LAUGHS.decode(), "error"),
    "leg-no-source": (_swap("    requirements: [six]", "    {}"), "error"),
    "leg-path-missing": (_swap("    requirements: [six]", "    path: /nonexistent/venv"), "any"),
    "baseline-unknown-leg": (_swap("  leg: a", "  leg: zz"), "error"),
    "control-in-question": (
        _swap("question: does six import?", 'question: "\\e]0;t\\a\\e[2J why"'),
        "ok",
    ),
    "bom": ("\ufeff" + GOOD_RECIPE, "any"),
    "crlf": (GOOD_RECIPE.replace("\n", "\r\n"), "ok"),
}
CASES += [
    (f"recipe-{name}", _recipe_case(body), expect) for name, (body, expect) in RECIPES.items()
]
CASES += [
    ("leg-show-good", lambda t: ["leg", "show", str(_recipe(t, GOOD_RECIPE))], "ok"),
    (
        "leg-show-unknown-leg",
        lambda t: ["leg", "show", str(_recipe(t, GOOD_RECIPE)), "zz"],
        "error",
    ),
    (
        "doctor-recipe-unknown-leg",
        lambda t: ["doctor", str(_recipe(t, GOOD_RECIPE)), "zz", "--no-gpu"],
        "error",
    ),
    (
        "doctor-env-noequals",
        lambda t: ["doctor", sys.executable, "--no-gpu", "--env", "NOEQ"],
        "error",
    ),
    (
        "doctor-directory-not-venv",
        lambda t: ["doctor", FILE_KINDS["directory"](t), "--no-gpu"],
        "fails",
    ),
    (
        "study-good-recipe-dry",
        lambda t: ["study", str(_recipe(t, GOOD_RECIPE)), "--dry-run"],
        "any",
    ),
]

# ------------------------------------------------------------------ numbers and places

_RECIPE_ARG: Callable[[Path], str] = lambda t: str(_recipe(t, GOOD_RECIPE))  # noqa: E731
for _opt, _values in {
    "--grace": ["nan", "inf", "-1", "1e400", "abc"],
    "--repeats": ["0", "1000000000", "-1", "1.5"],
    "--gpus": ["99999999", "-1", "abc", "0,0", "1e9"],
}.items():
    CASES += [
        (
            f"matrix{_opt}={v}",
            (lambda t, o=_opt, v=v: ["matrix", _RECIPE_ARG(t), "--dry-run", o, v]),
            "error",
        )
        for v in _values
    ]
CASES += [
    ("matrix-out-empty", lambda t: ["matrix", _RECIPE_ARG(t), "--out", ""], "error"),
    (
        "matrix-out-file",
        lambda t: ["matrix", _RECIPE_ARG(t), "--out", str(_write(t, "f", b"x"))],
        "error",
    ),
    (
        "matrix-out-proc",
        lambda t: ["matrix", _RECIPE_ARG(t), "--out", "/proc/vllmdiag-run"],
        "error",
    ),
    ("matrix-out-dev-null", lambda t: ["matrix", _RECIPE_ARG(t), "--out", "/dev/null"], "error"),
    (
        "matrix-runs-root-proc",
        lambda t: ["matrix", _RECIPE_ARG(t), "--runs-root", "/proc"],
        "error",
    ),
    (
        "matrix-runs-root-file",
        lambda t: ["matrix", _RECIPE_ARG(t), "--runs-root", str(_write(t, "f", b"x"))],
        "error",
    ),
    ("matrix-verdict-extra", lambda t: ["matrix", "verdict", str(_copy_run(t)), "more"], "error"),
    ("matrix-verdict-good", lambda t: ["matrix", "verdict", str(_copy_run(t))], "any"),
    (
        "compare-factor-nan",
        lambda t: [
            "compare",
            str(FIX / "tables/h200.tsv"),
            str(FIX / "tables/b200.md"),
            "--factor",
            "nan",
        ],
        "error",
    ),
    (
        "compare-factor-negative",
        lambda t: [
            "compare",
            str(FIX / "tables/h200.tsv"),
            str(FIX / "tables/b200.md"),
            "--factor",
            "-1",
        ],
        "error",
    ),
    (
        "compare-noise-inf",
        lambda t: [
            "compare",
            str(FIX / "tables/h200.tsv"),
            str(FIX / "tables/b200.md"),
            "--noise",
            "inf",
        ],
        "error",
    ),
    (
        "compare-agree-nan",
        lambda t: [
            "compare",
            str(FIX / "tables/h200.tsv"),
            str(FIX / "tables/b200.md"),
            "--agree",
            "nan",
        ],
        "error",
    ),
    (
        "compare-pair-bad",
        lambda t: [
            "compare",
            str(FIX / "tables/h200.tsv"),
            str(FIX / "tables/b200.md"),
            "--pair",
            "x",
        ],
        "error",
    ),
    (
        "compare-md-proc",
        lambda t: [
            "compare",
            str(FIX / "tables/h200.tsv"),
            str(FIX / "tables/b200.md"),
            "--md",
            "/proc/x.md",
        ],
        "error",
    ),
    (
        "compare-md-dir",
        lambda t: [
            "compare",
            str(FIX / "tables/h200.tsv"),
            str(FIX / "tables/b200.md"),
            "--md",
            FILE_KINDS["directory"](t),
        ],
        "error",
    ),
    (
        "compare-good",
        lambda t: ["compare", str(FIX / "tables/h200.tsv"), str(FIX / "tables/b200.md")],
        "ok",
    ),
    (
        "profile-diff-top-0",
        lambda t: ["profile", "diff", str(TRACE_A), str(TRACE_B), "--top", "0"],
        "error",
    ),
    (
        "profile-diff-top-huge",
        lambda t: [
            "profile",
            "diff",
            str(TRACE_A),
            str(TRACE_B),
            "--top",
            "9" * 30,
            "--out",
            str(t / "o"),
        ],
        "any",
    ),
    (
        "profile-diff-out-file",
        lambda t: [
            "profile",
            "diff",
            str(TRACE_A),
            str(TRACE_B),
            "--out",
            str(_write(t, "f", b"x")),
        ],
        "error",
    ),
    (
        "profile-diff-out-proc",
        lambda t: ["profile", "diff", str(TRACE_A), str(TRACE_B), "--out", "/proc/x"],
        "error",
    ),
    (
        "profile-diff-out-dev-null",
        lambda t: ["profile", "diff", str(TRACE_A), str(TRACE_B), "--out", "/dev/null"],
        "error",
    ),
    (
        "profile-diff-runs-root-proc",
        lambda t: ["profile", "diff", str(TRACE_A), str(TRACE_B), "--runs-root", "/proc"],
        "error",
    ),
    (
        "profile-diff-same-side",
        lambda t: ["profile", "diff", str(TRACE_A), str(TRACE_A), "--out", str(t / "o")],
        "any",
    ),
    ("profile-capture-no-leg", lambda t: ["profile", "capture", "--script", "x.py"], "error"),
    (
        "profile-capture-bad-leg",
        lambda t: ["profile", "capture", "--leg", "noequals", "--leg", "b=/x", "--script", "x.py"],
        "error",
    ),
    (
        "profile-capture-missing-legs",
        lambda t: [
            "profile",
            "capture",
            "--leg",
            "a=/nonexistent",
            "--leg",
            "b=/nonexistent",
            "--script",
            str(_write(t, "s.py", b"pass\n")),
        ],
        "error",
    ),
    (
        "report-out-dir",
        lambda t: ["report", str(RUN_FIXTURE), "--out", FILE_KINDS["directory"](t)],
        "error",
    ),
    ("report-out-proc", lambda t: ["report", str(RUN_FIXTURE), "--out", "/proc/x.md"], "error"),
    ("report-out-dev-full", lambda t: ["report", str(RUN_FIXTURE), "--out", "/dev/full"], "error"),
    ("report-good", lambda t: ["report", str(RUN_FIXTURE)], "ok"),
    ("window-bad-symbol", lambda t: ["window", "six", "--symbol", ""], "error"),
    (
        "window-bad-spec",
        lambda t: ["window", "six", "--symbol", "six.moves", "--versions", ">>=1;rm"],
        "error",
    ),
    (
        "window-bad-date",
        lambda t: ["window", "six", "--symbol", "six.moves", "--exclude-newer", "2026-02-30"],
        "error",
    ),
    (
        "window-bad-python",
        lambda t: ["window", "six", "--symbol", "six.moves", "--python", "/nonexistent/python"],
        "error",
    ),
    (
        "window-jobs-huge",
        lambda t: [
            "window",
            "six",
            "--symbol",
            "six.moves",
            "--jobs",
            "9" * 20,
            "--python",
            "/nonexistent/python",
        ],
        "error",
    ),
    ("window-bad-package", lambda t: ["window", "six;rm -rf", "--symbol", "six.moves"], "error"),
    (
        "bisect-bad-version",
        lambda t: ["bisect", "six", "--good", "not a version", "--bad", "1.16.0", "--", "true"],
        "error",
    ),
    (
        "bisect-same-ends",
        lambda t: ["bisect", "six", "--good", "1.16.0", "--bad", "1.16.0", "--", "true"],
        "error",
    ),
    (
        "bisect-timeout-nan",
        lambda t: [
            "bisect",
            "six",
            "--good",
            "1.15.0",
            "--bad",
            "1.16.0",
            "--timeout",
            "nan",
            "--",
            "true",
        ],
        "error",
    ),
    (
        "bisect-threshold-nan",
        lambda t: [
            "bisect",
            "six",
            "--good",
            "1.15.0",
            "--bad",
            "1.16.0",
            "--metric",
            "m",
            "--threshold",
            "nan",
            "--",
            "true",
        ],
        "error",
    ),
    (
        "bisect-no-check",
        lambda t: ["bisect", "six", "--good", "1.15.0", "--bad", "1.16.0"],
        "error",
    ),
    (
        "bisect-recipe-missing",
        lambda t: [
            "bisect",
            "six",
            "--good",
            "1.15.0",
            "--bad",
            "1.16.0",
            "--recipe",
            str(t / "nope.yaml"),
            "--cell",
            "x",
        ],
        "error",
    ),
    (
        "bisect-commit-no-repo",
        lambda t: [
            "bisect",
            "vllm",
            "--by",
            "commit",
            "--good",
            "abc",
            "--bad",
            "def",
            "--repo",
            str(t / "nope"),
            "--",
            "true",
        ],
        "error",
    ),
    (
        "bisect-commit-repo-file",
        lambda t: [
            "bisect",
            "vllm",
            "--by",
            "commit",
            "--good",
            "abc",
            "--bad",
            "def",
            "--repo",
            str(_write(t, "f", b"x")),
            "--",
            "true",
        ],
        "error",
    ),
    (
        "bisect-by-bad",
        lambda t: ["bisect", "six", "--by", "tag", "--good", "1", "--bad", "2", "--", "true"],
        "error",
    ),
    ("arms-show-control", lambda t: ["arms", "show", "\x1b[2Jx"], "error"),
    ("arms-list-bad-family", lambda t: ["arms", "list", "--family", "../../etc"], "error"),
    ("arms-list-json", lambda t: ["arms", "list", "--json"], "ok"),
    ("study-tables-empty-dir", lambda t: ["study", "tables", FILE_KINDS["directory"](t)], "error"),
]

# ------------------------------------------------------ run directories, tampered with


def _tampered(change: Callable[[Path], object]) -> Callable[[Path], str]:
    def build(t: Path) -> str:
        run = _copy_run(t)
        change(run)
        return str(run)

    return build


def _symlink_out(path: Path, target: Path) -> None:
    import shutil

    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    os.symlink(target, path)


RUN_TAMPERING: dict[str, Callable[[Path], object]] = {
    "manifest-missing": lambda r: (r / "manifest.json").unlink(),
    "manifest-truncated": lambda r: (r / "manifest.json").write_bytes(
        (r / "manifest.json").read_bytes()[:100]
    ),
    "manifest-array": lambda r: (r / "manifest.json").write_text("[1, 2]"),
    "manifest-deep": lambda r: (r / "manifest.json").write_bytes(DEEP_JSON),
    "manifest-fifo": lambda r: ((r / "manifest.json").unlink(), os.mkfifo(r / "manifest.json")),
    "manifest-dev-zero": lambda r: _symlink_out(r / "manifest.json", Path("/dev/zero")),
    "manifest-non-utf8": lambda r: (r / "manifest.json").write_bytes(b'{"a": "\xff"}'),
    "manifest-wrong-types": lambda r: (r / "manifest.json").write_text(
        '{"envs": 5, "cells": "x", "recipe": []}'
    ),
    "result-truncated": lambda r: (_first_cell(r) / "result.json").write_text('{"argv": ['),
    "result-wrong-type": lambda r: (_first_cell(r) / "result.json").write_text('"pass"'),
    "result-schema-999": lambda r: (_first_cell(r) / "result.json").write_text(
        json.dumps({**json.loads((_first_cell(r) / "result.json").read_text()), "schema": 999})
    ),
    "result-status-bogus": lambda r: (_first_cell(r) / "result.json").write_text(
        json.dumps({**json.loads((_first_cell(r) / "result.json").read_text()), "status": "maybe"})
    ),
    "result-dev-zero": lambda r: _symlink_out(_first_cell(r) / "result.json", Path("/dev/zero")),
    "result-symlink-outside": lambda r: _symlink_out(
        _first_cell(r) / "result.json", Path("/etc/hostname")
    ),
    "cell-symlink-outside": lambda r: _symlink_out(_first_cell(r), Path("/etc")),
    "cells-is-file": lambda r: _symlink_out(r / "cells", Path("/dev/null")),
    "journal-garbage": lambda r: (r / "run.jsonl").write_bytes(b"\x00\xff{not json\n" * 1000),
    "journal-deep-line": lambda r: (r / "run.jsonl").write_bytes(DEEP_JSON + b"\n"),
    "journal-missing": lambda r: (r / "run.jsonl").unlink(),
    "verdict-garbage": lambda r: (r / "verdict.json").write_bytes(b"\x00garbage"),
    "log-huge-line": lambda r: _long_line(_first_cell(r), "log.txt", 16 << 20),
    "log-dev-zero": lambda r: _symlink_out(_first_cell(r) / "log.txt", Path("/dev/zero")),
    "log-fifo": lambda r: (
        (_first_cell(r) / "log.txt").unlink(),
        os.mkfifo(_first_cell(r) / "log.txt"),
    ),
    "envs-garbage": lambda r: [p.write_bytes(b"\xff") for p in (r / "envs").iterdir()],
}
for _name, _change in RUN_TAMPERING.items():
    for _cmd, _argv2 in {
        "verdict": lambda p: ["matrix", "verdict", p],
        "report": lambda p: ["report", p],
        "triage": lambda p: ["triage", p],
    }.items():
        CASES.append(
            (f"run-{_name}-{_cmd}", (lambda t, c=_change, a=_argv2: a(_tampered(c)(t))), "any")
        )

# ---------------------------------------------------------------------------- logs

LOG_KINDS: dict[str, Callable[[Path], Path]] = {
    "utf16": lambda t: _write(t, "ps.log", UTF16_LOG),
    "truncated-gzip": lambda t: _truncated_gzip(t, "cut.log.gz"),
    "gzip-garbage": lambda t: _write(t, "bad.log.gz", b"\x1f\x8b\x08\x00" + os.urandom(5000)),
    "gzip-bomb": lambda t: _gzip_bomb(t, "bomb.log.gz"),
    "cr-only": lambda t: _write(
        t, "cr.log", UTF16_LOG.decode("utf-16").replace("\n", "\r").encode()
    ),
    "long-line": lambda t: _long_line(t, "one.log"),
    "ansi-noise": lambda t: _write(
        t,
        "ansi.log",
        b"".join(
            b"\x1b[3%dm%c" % (i % 8, c) for i, c in enumerate(UTF16_LOG.decode("utf-16").encode())
        ),
    ),
    "many-tracebacks": lambda t: _write(t, "many.log", UTF16_LOG.decode("utf-16").encode() * 20000),
    "sparse-zeros": lambda t: _sparse(t, "zeros.log", 96 << 20),
}
for _name, _make in LOG_KINDS.items():
    CASES.append((f"log-{_name}-triage", (lambda t, m=_make: ["triage", str(m(t))]), "any"))
    CASES.append(
        (f"log-{_name}-triage-json", (lambda t, m=_make: ["triage", str(m(t)), "--json"]), "any")
    )
    CASES.append(
        (f"log-{_name}-fingerprint", (lambda t, m=_make: ["fingerprint", str(m(t))]), "any")
    )
CASES += [
    ("triage-stdin-empty", lambda t: ["triage", "-"], "any"),
    (
        "triage-many-files",
        lambda t: ["triage", *[str(_write(t, f"l{i}.log", b"x\n")) for i in range(300)]],
        "any",
    ),
    ("triage-dash-and-dash", lambda t: ["triage", "-", "-"], "any"),
]

# --------------------------------------------------------------------------- traces

TRACE_KINDS: dict[str, Callable[[Path], Path]] = {
    "empty-dir": lambda t: Path(FILE_KINDS["directory"](t)),
    "kineto-truncated-gz": lambda t: _trace_dir(
        t, "k1", (TRACE_A / "trace.json.gz").read_bytes()[:5000], "trace.json.gz"
    ),
    "kineto-events-not-list": lambda t: _trace_dir(t, "k2", _kineto(5)),
    "kineto-events-of-strings": lambda t: _trace_dir(t, "k3", _kineto(["a", 1, None])),
    "kineto-bad-fields": lambda t: _trace_dir(
        t, "k4", _kineto([{"ph": "X", "cat": "kernel", "name": 5, "ts": "x", "dur": -1}])
    ),
    "kineto-deep": lambda t: _trace_dir(t, "k5", b'{"traceEvents": ' + DEEP_JSON + b"}"),
    "kineto-two-docs": lambda t: _trace_dir(t, "k6", _kineto([]) + _kineto([])),
    "kineto-huge-number": lambda t: _trace_dir(
        t,
        "k7",
        _kineto([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]).replace(
            b'"dur": 1', b'"dur": ' + b"9" * 5000
        ),
    ),
    "kineto-control-name": lambda t: _trace_dir(
        t,
        "k8",
        _kineto([{"ph": "X", "cat": "kernel", "name": "\x1b]0;x\x07\ud800", "ts": 1, "dur": 5}]),
    ),
    "kineto-non-utf8": lambda t: _trace_dir(t, "k9", b'{"traceEvents": [{"name": "\xff"}]}'),
    "nsys-garbage": lambda t: _sqlite_garbage(t).parent,
    "nsys-wrong-schema": lambda t: _sqlite_wrong_schema(t).parent,
    "pyspy-garbage": lambda t: _trace_dir(
        t, "p1", b"\x00\xff no counts here\n;;;; x\n", "profile.folded"
    ),
    "pyspy-huge-count": lambda t: _trace_dir(
        t, "p2", b"a;b " + b"9" * 5000 + b"\n", "profile.folded"
    ),
    "trace-file-fifo": lambda t: _fifo(t, "trace.json"),
    "trace-dev-zero-link": lambda t: (os.symlink("/dev/zero", t / "z.json"), t / "z.json")[1],
}
for _name, _make in TRACE_KINDS.items():
    CASES.append(
        (
            f"trace-{_name}",
            (
                lambda t, m=_make: [
                    "profile",
                    "diff",
                    str(m(t)),
                    str(TRACE_B),
                    "--out",
                    str(t / "o"),
                ]
            ),
            "any-nonzero",
        )
    )

# ------------------------------------------------------------------- study directories

STUDY_KINDS: dict[str, dict[str, bytes]] = {
    "study-json-garbage": {"study.json": b"\x00garbage"},
    "study-json-array": {"study.json": b"[]"},
    "study-json-deep": {"study.json": DEEP_JSON},
    "study-results-garbage": {"study.json": b"{}", "results.jsonl": b"{bad\n\xff\n"},
}
for _name, _files in STUDY_KINDS.items():
    CASES.append(
        (
            f"study-tables-{_name}",
            (lambda t, f=_files: ["study", "tables", str(_study_dir(t, f))]),
            "any",
        )
    )
    CASES.append(
        (
            f"compare-{_name}",
            (lambda t, f=_files: ["compare", str(_study_dir(t, f)), str(FIX / "tables/h200.tsv")]),
            "any",
        )
    )


@pytest.mark.parametrize(("build", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input_ends_cleanly(build: Build, expect: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    argv = build(work)
    outcome = run_cli(argv, work)
    why = judge(outcome, expect)
    assert why is None, (
        f"{why}: vllmdiag {argv!r}\n--- stdout\n{outcome.out[-3000:]}"
        f"\n--- stderr\n{outcome.err[-3000:]}"
    )
