"""The state of the recipe's directory when a batch ran: its git commit, ``git status
--porcelain`` and the diff of uncommitted changes (the seeds' "uncommitted local
changes", which were "the only reliable record" of what the harness did).

Read through :mod:`vllmdiag.services.proc`, with secrets masked; a directory outside a git
repository, or no git at all, is said so, never an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.errors import ProcessError
from vllmdiag.services import proc, redact

#: A diff beyond this is cut (and said so): the manifest is for reading.
MAX_DIFF = 256 * 1024
_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class SourceState:
    """``repository`` is None when the directory is not in a git repository; ``note``
    says why nothing more is known (no git, git failed)."""

    recipe_dir: str
    repository: str | None = None
    commit: str | None = None
    branch: str | None = None
    status: tuple[str, ...] = ()
    diff: str = ""
    truncated: bool = False
    note: str | None = None

    @property
    def dirty(self) -> bool:
        return bool(self.status)


def source_state(recipe_dir: Path) -> SourceState:
    where = str(recipe_dir)
    top = _git(recipe_dir, "rev-parse", "--show-toplevel")
    if isinstance(top, _Failed):
        if top.missing:
            return SourceState(where, note="git is not installed: the state is unknown")
        return SourceState(where)  # not in a repository
    repo = top.strip()
    commit = _git(recipe_dir, "rev-parse", "HEAD")
    branch = _git(recipe_dir, "rev-parse", "--abbrev-ref", "HEAD")
    status = _git(recipe_dir, "status", "--porcelain", "--untracked-files=all")
    has_commit = isinstance(commit, str)
    diff = _git(recipe_dir, "diff", "HEAD", "--no-color", "--no-ext-diff") if has_commit else ""
    if isinstance(status, _Failed) or isinstance(diff, _Failed):
        failed = status if isinstance(status, _Failed) else diff
        assert isinstance(failed, _Failed)
        return SourceState(where, repository=repo, note=f"git failed: {failed.why}")
    text = redact.text(diff)
    cut = len(text) > MAX_DIFF
    return SourceState(
        recipe_dir=where,
        repository=repo,
        commit=commit.strip() if isinstance(commit, str) else None,
        branch=branch.strip() if isinstance(branch, str) else None,
        status=tuple(redact.text(line) for line in status.splitlines() if line.strip()),
        diff=text[:MAX_DIFF],
        truncated=cut,
        note=None if has_commit else "the repository has no commit yet",
    )


@dataclass(frozen=True)
class _Failed:
    why: str
    missing: bool = False


def _git(cwd: Path, *args: str) -> str | _Failed:
    env = proc.clean_environ()
    env["GIT_OPTIONAL_LOCKS"] = "0"  # reading the state never takes the index lock
    env["LC_ALL"] = "C"
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    try:
        done = proc.run(["git", *args], env=env, cwd=cwd, timeout=_TIMEOUT_S, capture=True)
    except ProcessError as exc:
        return _Failed(exc.message, missing=True)
    if done.interrupted:
        raise KeyboardInterrupt
    if not done.ok:
        reason = "timed out" if done.timed_out else (done.stderr.strip() or f"exit {done.rc}")
        return _Failed(reason.splitlines()[0] if reason else "failed")
    return done.stdout
