"""The commits a commit bisection walks, from git (run through :mod:`vllmdiag.services.proc`).

The main branch in first-parent order from the good end to the bad one: the commits that
landed on it one by one, each with its own per-commit wheel. A release tag often sits on
a release branch, off the main line; each end is then replaced by its merge-base with the
main branch (the commit the release branched from), and that is said.

The repository is the user's clone (``--repo``) or one vllmdiag keeps in its cache:
metadata only (``git clone --filter=blob:none --no-checkout``), fetched again on reuse.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.errors import ProcessError, VllmdiagError
from vllmdiag.jobs.bisect.commit_info import CommitInfo
from vllmdiag.services import proc, redact
from vllmdiag.services.locks import file_lock
from vllmdiag.services.paths import cache_root

DEFAULT_REPOS = {"vllm": "https://github.com/vllm-project/vllm.git"}
_FORMAT = "%H%x1f%P%x1f%aI%x1f%cI%x1f%s%x1e"


@dataclass(frozen=True)
class CommitRange:
    """``commits``: the good end's base first, the bad end's base last; ``notes``: what was
    substituted (an end off the main branch) and where the range came from."""

    commits: tuple[CommitInfo, ...]
    main_ref: str
    good_base: str
    bad_base: str
    notes: tuple[str, ...]


def _git_env() -> dict[str, str]:
    env = proc.clean_environ()
    env["GIT_TERMINAL_PROMPT"] = "0"  # never ask for a password: fail instead
    env.pop("GIT_DIR", None)
    return env


def git(repo: Path, *args: str, what: str | None = None, timeout: float = 600.0) -> str:
    try:
        return proc.check_output(
            ["git", "-C", str(repo), *args], env=_git_env(), timeout=timeout, what=what
        )
    except ProcessError as exc:
        raise VllmdiagError(
            redact.text(exc.message),
            where=str(repo),
            hint="check the repository (a clone of the project, with its tags)",
        ) from None


def cached_clone(url: str) -> tuple[Path, str | None]:
    """vllmdiag's metadata-only clone of ``url`` (made once, fetched again on reuse), and
    a note when the fetch failed and the clone is used as it was."""
    shown = redact.url(url)
    key = hashlib.sha256(url.encode()).hexdigest()[:16]
    root = cache_root() / "repos"
    root.mkdir(parents=True, exist_ok=True)
    repo = root / key
    with file_lock(root / f"{key}.lock", what=f"the clone of {shown}"):
        if (repo / ".git").is_dir():
            try:
                git(repo, "fetch", "--quiet", "--tags", "--force", "origin", what="git fetch")
            except VllmdiagError as exc:
                said = exc.message.splitlines()[-1][:200]
                return repo, f"cannot fetch {shown} ({said}): using the clone as it was"
            return repo, None
        part = root / f"{key}.part{os.getpid()}"
        shutil.rmtree(part, ignore_errors=True)
        done = proc.run(
            ["git", "clone", "--quiet", "--filter=blob:none", "--no-checkout", url, str(part)],
            env=_git_env(),
            capture=True,
            timeout=3600,
        )
        if done.interrupted:
            shutil.rmtree(part, ignore_errors=True)
            raise KeyboardInterrupt
        if not done.ok:
            shutil.rmtree(part, ignore_errors=True)
            said = redact.text((done.stderr or done.stdout).strip())[-1500:]
            raise VllmdiagError(
                f"cannot clone {shown}: {said or f'git exited {done.rc}'}",
                where="--repo-url",
                hint="check the URL and the network, or give a clone of your own with --repo",
            )
        shutil.rmtree(repo, ignore_errors=True)
        part.rename(repo)  # whole or not at all: an interrupted clone is never reused
    return repo, None


def resolve(repo: Path, rev: str, where: str) -> str:
    done = proc.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        env=_git_env(),
        capture=True,
        timeout=60,
    )
    if not done.ok:
        raise VllmdiagError(
            f"no commit {rev!r} in {repo}",
            where=where,
            hint="give a tag, branch or sha the clone has (git fetch --tags, for a release tag)",
        )
    return done.stdout.strip()


def main_ref(repo: Path, main: str) -> str:
    """The main branch as this clone knows it: ``origin/<main>`` (a clone's view of the
    project), else the local branch, else ``main`` as given (any ref)."""
    for ref in (f"refs/remotes/origin/{main}", f"refs/heads/{main}", main):
        done = proc.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            env=_git_env(),
            capture=True,
            timeout=60,
        )
        if done.ok:
            return ref
    raise VllmdiagError(
        f"no branch {main!r} in {repo}",
        where="--main",
        hint="name the project's main branch with --main (e.g. main or master)",
    )


def _parse(out: str) -> list[tuple[CommitInfo, list[str]]]:
    found = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, parents, adate, cdate, subject = record.split("\x1f", 4)
        found.append((CommitInfo.of(sha, subject, adate, cdate), parents.split()))
    return found


def _base(repo: Path, sha: str, ref: str, rev: str, end: str, notes: list[str]) -> str:
    base = git(repo, "merge-base", sha, ref, what=f"git merge-base {rev} {ref}").strip()
    if not base:
        raise VllmdiagError(
            f"{rev} shares no history with {ref}", where=end, hint="give a commit of the project"
        )
    if base != sha:
        notes.append(f"{end} {rev} is not on {ref}: using its merge-base {base[:10]} with it")
    return base


def commit_range(repo: Path, good: str, bad: str, main: str = "main") -> CommitRange:
    """The main branch's commits from ``good``'s base to ``bad``'s, first-parent order."""
    ref = main_ref(repo, main)
    notes: list[str] = []
    good_sha, bad_sha = resolve(repo, good, "--good"), resolve(repo, bad, "--bad")
    good_base = _base(repo, good_sha, ref, good, "--good", notes)
    bad_base = _base(repo, bad_sha, ref, bad, "--bad", notes)
    if good_base == bad_base:
        raise VllmdiagError(
            f"--good {good} and --bad {bad} meet {ref} at the same commit {good_base[:10]}",
            where="--bad",
            hint="there is no commit between them on the main branch to bisect",
        )
    first = _parse(git(repo, "log", "-1", f"--format={_FORMAT}", good_base, what="git log"))
    walked = _parse(
        git(
            repo,
            "log",
            "--first-parent",
            "--reverse",
            f"--format={_FORMAT}",
            f"{good_base}..{bad_base}",
            what="git log --first-parent",
        )
    )
    if not walked or not walked[0][1] or walked[0][1][0] != good_base:
        raise VllmdiagError(
            f"--good {good} ({good_base[:10]}) is not on {ref}'s first-parent line before "
            f"--bad {bad} ({bad_base[:10]})",
            where="--good",
            hint="give a --good end older than --bad on the main branch",
        )
    commits = (first[0][0], *(c for c, _ in walked))
    notes.append(f"{len(commits)} commits on {ref} from {good_base[:10]} to {bad_base[:10]}")
    return CommitRange(commits, ref, good_base, bad_base, tuple(notes))
