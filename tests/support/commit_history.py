"""A small project in a real git history, with a real wheel built per commit into a
per-commit index laid out as vLLM's is (docs/ci/nightly_builds.md of vllm-project/vllm):

    <root>/<sha>/ticker-<version>-py3-none-any.whl
    <root>/<sha>/index.html             project list (default variant)
    <root>/<sha>/ticker/index.html      the default variant's package page
    <root>/<sha>/cpu/ticker/index.html  the cpu variant's package page (../../<wheel>)

The history: ``main`` first-parent, a feature branch merged into it with ``--no-ff``
(its own commits are off the first-parent line), and two releases tagged on release
branches off main (``v0.1.0`` forked at main[3], ``v0.2.0`` at main[LAST]), as vLLM tags
its releases. ``answer()`` turns wrong at main[BREAKS]; ``work()`` slows from 40 ms to
400 ms at main[SLOWS]. Some commits have no wheel (``NO_WHEEL``, one of them the first
midpoint a bisection looks at); one has only its default variant (``ROOT_ONLY``).
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import uv

from vllmdiag.jobs.bisect.search import StepVerdict, next_candidate

BREAKS = 17
SLOWS = 22
LAST = 28
FORK_GOOD = 3
PYPROJECT = """\
[project]
name = "ticker"
version = "{version}"
description = "a package whose behaviour changes at known commits"
requires-python = ">=3.8"

[build-system]
requires = ["flit_core>=3.4,<4"]
build-backend = "flit_core.buildapi"
"""
MODULE = '''\
"""ticker"""
import time

DELAY = {delay}


def answer():
    return {answer}


def work():
    time.sleep(DELAY)
'''


@dataclass(frozen=True)
class History:
    bare: Path  # the project's "remote" (a bare repository, cloned for real)
    wheels: Path  # the per-commit index root
    main: tuple[str, ...]  # main's first-parent commits, oldest first
    feature: tuple[str, ...]  # the feature branch's own commits (off the first parent)
    no_wheel: frozenset[str]
    root_only: str
    subjects: dict[str, str]

    @property
    def template(self) -> str:
        return self.wheels.as_uri() + "/{commit}/{variant}"

    @property
    def in_range(self) -> tuple[str, ...]:
        """main[FORK_GOOD] .. main[LAST]: what a bisection from v0.1.0 to v0.2.0 walks."""
        return self.main[FORK_GOOD : LAST + 1]


def _git(repo: Path, *args: str, when: int = 0) -> str:
    stamp = f"2025-06-01T{10 + when // 60:02d}:{when % 60:02d}:00+02:00"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.org",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.org",
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_DATE": stamp,
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _write(work: Path, delay: float, answer: int, note: str) -> None:
    (work / "ticker").mkdir(exist_ok=True)
    (work / "pyproject.toml").write_text(PYPROJECT.format(version="0.0.0"))
    (work / "ticker" / "__init__.py").write_text(MODULE.format(delay=delay, answer=answer))
    with open(work / "NOTES.txt", "a") as fh:
        fh.write(note + "\n")


def _commit(work: Path, subject: str, when: int) -> str:
    _git(work, "add", "-A", when=when)
    _git(work, "commit", "-q", "-m", subject, when=when)
    return _git(work, "rev-parse", "HEAD")


def build_history(root: Path, uv_cache: Path) -> History:
    work = root / "work"
    work.mkdir(parents=True)
    _git(work, "init", "-q", "-b", "main")
    main: list[str] = []
    feature: list[str] = []
    subjects: dict[str, str] = {}
    clock = 0
    for i in range(LAST + 3):
        clock += 1
        if i == 9:  # a feature branch, merged without fast-forward
            _git(work, "checkout", "-q", "-b", "feature")
            for j in range(2):
                _write(work, 0.04, 42, f"feature {j}")
                feature.append(_commit(work, f"Feature step {j}", clock))
                clock += 1
            _git(work, "checkout", "-q", "main")
            _git(
                work,
                "merge",
                "-q",
                "--no-ff",
                "-m",
                "Merge the feature (#109)",
                "feature",
                when=clock,
            )
            sha = _git(work, "rev-parse", "HEAD")
        else:
            delay = 0.4 if i >= SLOWS else 0.04
            answer = 41 if i >= BREAKS else 42
            subject = {
                BREAKS: f"Return the answer off by one (#{100 + i})",
                SLOWS: f"Sleep longer in work (#{100 + i})",
            }.get(i, f"Change {i} (#{100 + i})" if i % 4 else f"Change {i} without a PR")
            _write(work, delay, answer, f"change {i}")
            sha = _commit(work, subject, clock)
        main.append(sha)
        subjects[sha] = _git(work, "log", "-1", "--format=%s", sha)
    for tag, fork in (("v0.1.0", FORK_GOOD), ("v0.2.0", LAST)):
        branch = f"releases/{tag}"
        _git(work, "checkout", "-q", "-b", branch, main[fork])
        (work / "RELEASE").write_text(tag + "\n")
        clock += 1
        _commit(work, f"Release {tag}", clock)
        _git(work, "tag", tag, when=clock)
    _git(work, "checkout", "-q", "main")
    bare = root / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    # serve blobless clones, as GitHub does
    subprocess.run(["git", "-C", str(bare), "config", "uploadpack.allowFilter", "true"], check=True)
    wheels = root / "wheels"
    in_range = main[FORK_GOOD : LAST + 1]
    first = next_candidate(len(in_range), {0: StepVerdict.GOOD, len(in_range) - 1: StepVerdict.BAD})
    assert first is not None
    mid = in_range[first]
    no_wheel = frozenset({main[7], mid, main[24]})
    root_only = main[19]
    jobs = [(n, sha) for n, sha in enumerate(main) if sha not in no_wheel]
    with ThreadPoolExecutor(2) as pool:
        list(
            pool.map(
                lambda job: _wheel(
                    work, root, wheels, *job, root_only=root_only, uv_cache=uv_cache
                ),
                jobs,
            )
        )
    return History(bare, wheels, tuple(main), tuple(feature), no_wheel, root_only, subjects)


def _wheel(
    work: Path, root: Path, wheels: Path, n: int, sha: str, *, root_only: str, uv_cache: Path
) -> None:
    """The commit's tree, its version set as its CI would (``0.2.0.dev<n>+g<sha>``),
    built by ``uv build --wheel`` with its build backend from the index."""
    src = root / "src" / sha
    src.mkdir(parents=True)
    blob = subprocess.run(["git", "-C", str(work), "archive", sha], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(blob.stdout)) as tar:
        tar.extractall(src)
    version = f"0.2.0.dev{n}+g{sha[:9]}"
    (src / "pyproject.toml").write_text(PYPROJECT.format(version=version))
    out = wheels / sha

    subprocess.run(
        [uv.find_uv_bin(), "build", "--wheel", "-q", "-o", str(out), str(src)],
        check=True,
        capture_output=True,
        env={**os.environ, "UV_CACHE_DIR": str(uv_cache)},
    )
    (wheel,) = [p.name for p in out.glob("*.whl")]
    href = wheel.replace("+", "%2B")  # S3 escapes "+" as vLLM's indexes do
    (out / "index.html").write_text('<html><body><a href="ticker/">ticker</a></body></html>\n')
    (out / "ticker").mkdir()
    (out / "ticker" / "index.html").write_text(
        f'<html><body><a href="../{href}">{wheel}</a></body></html>\n'
    )
    if sha != root_only:
        (out / "cpu" / "ticker").mkdir(parents=True)
        (out / "cpu" / "index.html").write_text(
            '<html><body><a href="ticker/">ticker</a></body></html>\n'
        )
        (out / "cpu" / "ticker" / "index.html").write_text(
            f'<html><body><a href="../../{href}">{wheel}</a></body></html>\n'
        )
