"""bisect --by commit for real: a small project's real git history (cloned from a real
bare repository), a real wheel built per commit into a per-commit file index laid out as
vLLM's, real uv legs and real checks; no mock of git, uv or the index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uv
from typer.testing import CliRunner

from tests.support.commit_history import BREAKS, FORK_GOOD, LAST, SLOWS, History, build_history
from tests.support.paths import FIXTURES, UV_CACHE
from vllmdiag.cli.app import app
from vllmdiag.jobs.bisect.commit_plan import as_of

pytestmark = [pytest.mark.network, pytest.mark.slow]  # uv build takes flit_core from the index

ANSWER = "import ticker, sys; sys.exit(0 if ticker.answer() == 42 else 1)"
TIMED = (
    "import time, ticker; t = time.perf_counter(); ticker.work(); "
    "print(f'elapsed_ms={(time.perf_counter() - t) * 1000:.1f}')"
)


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    yield build_history(tmp_path_factory.mktemp("history"), UV_CACHE)


def _args(h: History, *extra: str, good: str = "v0.1.0", bad: str = "v0.2.0") -> list[str]:
    return [
        "bisect",
        "ticker",
        "--by",
        "commit",
        "--good",
        good,
        "--bad",
        bad,
        "--repo-url",
        h.bare.as_uri(),
        "--wheels",
        h.template,
        "--variant",
        "cpu",
        *extra,
    ]


def _json(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_finds_the_breaking_commit_and_skips_commits_without_a_wheel(h: History) -> None:
    data = _json(_args(h, "--fresh", "--json", "--", "python", "-c", ANSWER))
    bad, good = data["first_bad"], data["last_good"]
    assert bad["commit"] == h.main[BREAKS] and good["commit"] == h.main[BREAKS - 1]
    assert bad["subject"] == "Return the answer off by one (#117)" and bad["pr"] == 117
    assert bad["date"] == "2025-06-01T10:20:00+02:00" and data["exact"]
    # The main branch in first-parent order from each release's fork point: the feature
    # branch's own commits are not steps, the merge that brought them is.
    assert [c["commit"] for c in data["commits"]] == list(h.in_range)
    assert not set(h.feature) & {c["commit"] for c in data["commits"]}
    assert any("v0.1.0 is not on refs/remotes/origin/main" in n for n in data["notes"])
    steps = {s["version"]: s for s in data["steps"]}
    skipped = [s for s in data["steps"] if s["verdict"] == "skip"]
    assert skipped and all(s["version"] in h.no_wheel for s in skipped)
    assert all(s["detail"].startswith(f"no wheel for {s['version']}") for s in skipped)
    assert steps[h.main[FORK_GOOD]]["verdict"] == "good"
    assert steps[h.main[LAST]]["verdict"] == "bad" and steps[h.main[LAST]]["rc"] == 1
    assert len(data["steps"]) < len(data["commits"]) / 2


def test_each_step_resolves_as_of_its_commit_and_the_repro_lines_work(
    h: History, tmp_path: Path
) -> None:
    data = _json(_args(h, "--json", "--", "python", "-c", ANSWER))
    journal = Path(data["journal"])
    bad = data["first_bad"]
    # The leg the step built: the commit's wheel by URL, the rest as of its commit date.
    env_line = (journal.parent / f"{bad['commit']}.install.log").read_text().splitlines()[0]
    marker = json.loads((Path(env_line.split()[1]) / ".vllmdiag-env.json").read_text())
    assert marker["exclude_newer"] == as_of(bad["committed"]) == "2025-06-01T08:20:00Z"
    (req,) = marker["requirements"]
    assert req.startswith("ticker @ file://") and bad["commit"] in req
    assert f"ticker-0.2.0.dev{BREAKS}+g{bad['commit'][:9]}-" in "\n".join(marker["freeze"])
    # The reproduce lines, run as a user would, give both sides' answers.
    shell_env = {**os.environ, "PATH": f"{Path(uv.find_uv_bin()).parent}:{os.environ['PATH']}"}
    for rep, want in zip(data["reproduce"], (0, 1), strict=True):
        script = "set -e\n" + "\n".join(rep["install"]) + "\n" + rep["check"] + "\n"
        done = subprocess.run(
            ["bash", "-c", script], cwd=tmp_path, env=shell_env, capture_output=True, text=True
        )
        if want == 0:
            assert done.returncode == 0, done.stderr
        else:  # set -e: the check's failure is the script's
            assert done.returncode == 1 and "Installed 1 package" in done.stderr


def test_a_commit_without_its_variant_uses_the_commits_default_variant(h: History) -> None:
    data = _json(_args(h, "--json", "--", "python", "-c", ANSWER))
    by = {s["version"]: s for s in data["steps"]}
    assert h.root_only in by, "the bisection path no longer crosses the root-only commit"
    assert by[h.root_only]["verdict"] == "bad"
    assert "no cpu index: tried the commit's default variant" in by[h.root_only]["detail"]


def _journal_of(marker: str) -> Path | None:
    for path in Path(os.environ["VLLMDIAG_CACHE"]).glob("bisect/*/journal.jsonl"):
        head = json.loads(path.read_text().splitlines()[0])["header"]
        if marker in " ".join(head["command"]):
            return path
    return None


def test_resumes_after_sigkill(h: History, tmp_path: Path) -> None:
    marker = str(tmp_path)
    check = ["python", "-c", f"import time; time.sleep(0.3)\n{ANSWER}  # {marker}"]
    argv = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()"]
    runner = subprocess.Popen(
        [*argv, *_args(h, "--", *check)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    journal = None
    while time.monotonic() < deadline:
        journal = _journal_of(marker)
        if journal is not None and len(journal.read_text().splitlines()) >= 3:
            break
        assert runner.poll() is None, runner.communicate()
        time.sleep(0.05)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    assert journal is not None
    kept = [json.loads(x)["version"] for x in journal.read_text().splitlines()[1:]]
    assert 2 <= len(kept) < 7
    data = _json(_args(h, "--json", "--", *check))
    assert data["first_bad"]["commit"] == h.main[BREAKS]
    resumed = {s["version"] for s in data["steps"] if s["resumed"]}
    assert set(kept) <= resumed and len(resumed) < len(data["steps"])
    assert Path(data["journal"]) == journal


def test_metric_slowdown_with_a_threshold_derived_from_the_ends(h: History) -> None:
    data = _json(
        _args(h, "--fresh", "--metric", "elapsed_ms", "--json", "--", "python", "-c", TIMED)
    )
    assert data["first_bad"]["commit"] == h.main[SLOWS]
    assert data["first_bad"]["subject"] == "Sleep longer in work (#122)"
    assert data["derived"] and 1 < data["threshold"] < 10  # lower is better: above 1
    assert 35 < data["baseline"] < 200
    for step in data["steps"]:
        if step["verdict"] != "skip":
            assert len(step["values"]) == 3, step  # --repeat defaults to 3 for a metric
            assert f"elapsed_ms={step['value']:g}" in step["detail"]
    slow = {s["version"]: s for s in data["steps"]}[h.main[LAST]]
    assert slow["value"] > 350 and slow["verdict"] == "bad"


def test_metric_with_a_given_threshold_on_a_users_clone(h: History, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(h.bare), str(clone)], check=True)
    args = _args(h, "--metric", "elapsed_ms", "--threshold", "2", "--repeat", "1", "--json")
    at = args.index("--repo-url")
    args[at : at + 2] = ["--repo", str(clone)]
    data = _json([*args, "--", "python", "-c", TIMED])
    assert data["first_bad"]["commit"] == h.main[SLOWS]
    assert not data["derived"] and data["threshold"] == 2.0
    assert all(len(s["values"]) == 1 for s in data["steps"] if s["verdict"] != "skip")


def test_the_cached_clone_is_fetched_on_reuse_and_used_as_it_was_when_it_cannot_be(
    h: History, tmp_path: Path
) -> None:
    import shutil

    remote = shutil.copytree(h.bare, tmp_path / "remote.git")
    subprocess.run(
        ["git", "-C", str(remote), "config", "uploadpack.allowFilter", "true"], check=True
    )
    args = _args(h, "--json", "--", "python", "-c", ANSWER)
    args[args.index("--repo-url") + 1] = remote.as_uri()
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    clones = list((Path(os.environ["VLLMDIAG_CACHE"]) / "repos").glob("*/.git"))
    (clone,) = [c.parent for c in clones if remote.as_uri() in (c / "config").read_text()]
    config = (clone / ".git" / "config").read_text()
    assert "partialclonefilter = blob:none" in config  # metadata only
    assert not (clone / "ticker").exists()  # no checkout
    listed = subprocess.run(
        ["git", "-C", str(clone), "rev-list", "--objects", "--all", "--missing=print"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert sum(line.startswith("?") for line in listed) > 30  # the blobs were never fetched
    # A commit lands on the remote's main: the next bisection fetches it.
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True)
    (work / "NOTES.txt").write_text("later\n")
    ident = ["-c", "user.name=d", "-c", "user.email=d@example.org"]
    subprocess.run(["git", "-C", str(work), *ident, "commit", "-qam", "Later (#999)"], check=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "main"], check=True)
    later = subprocess.run(
        ["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "-C", str(work), "tag", "v0.3.0"], check=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "v0.3.0"], check=True)

    def origin_main() -> str:
        done = subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "refs/remotes/origin/main"],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    assert origin_main() == h.main[-1]
    refetched = CliRunner().invoke(app, args)
    assert refetched.exit_code == 0, refetched.output
    assert origin_main() == later
    # The remote gone: the clone as it was, said.
    shutil.rmtree(remote)
    offline = CliRunner().invoke(app, args)
    assert offline.exit_code == 0, offline.output
    assert "using the clone as it was" in offline.stderr + offline.stdout


def test_revisions_the_clone_lacks_are_one_line_errors(h: History) -> None:
    result = CliRunner().invoke(app, _args(h, "--", "true", bad="v9.9.9"))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "no commit 'v9.9.9'" in result.stderr and "hint:" in result.stderr
    backwards = CliRunner().invoke(
        app, _args(h, "--", "true", good=h.main[LAST], bad=h.main[FORK_GOOD])
    )
    assert backwards.exit_code == 1 and "is not on refs/remotes/origin/main's first-parent" in (
        backwards.stderr
    )


def test_an_end_without_a_wheel_is_named_with_why(h: History) -> None:
    good = h.main[7]  # no wheel was built for it
    assert good in h.no_wheel
    result = CliRunner().invoke(app, _args(h, "--", "python", "-c", ANSWER, good=good))
    assert result.exit_code == 1 and "Traceback" not in result.output
    said = " ".join(result.stderr.split())
    assert f"--good: the --good end {good[:10]} (Change 7 (#107)) checks skip, not good" in said
    assert f"no wheel for {good}" in said


def test_metric_bisection_refuses_ends_inside_the_noise(h: History) -> None:
    before = h.main[SLOWS - 1]
    result = CliRunner().invoke(
        app, _args(h, "--metric", "elapsed_ms", "--", "python", "-c", TIMED, bad=before)
    )
    assert result.exit_code == 1
    said = " ".join(result.output.split())
    assert "the two ends do not differ beyond their noise" in said
    assert "under the 5% floor" in said or "within their spread" in said
    # both ends' values, each repeat of each, are said
    error = said[said.index("the two ends do not differ") :]
    assert "good end" in error and "bad end" in error
    assert error.split("good end", 1)[1].count(",") >= 4, error  # 3 + 3 repeats shown


RECIPE = """\
name: ticker-answer
question: Which commit of ticker broke answer()?
legs:
  plain:
    requirements: [ticker]
baseline:
  leg: plain
workloads:
  answer:
    command: ["{python}", "-c", "import ticker; assert ticker.answer() == 42, ticker.answer()"]
arms: []
repeats: 1
timeout: 120
"""


def test_a_recipe_cell_is_the_check_with_the_commits_wheel_on_its_leg(
    h: History, tmp_path: Path
) -> None:
    recipe = tmp_path / "ticker.yaml"
    recipe.write_text(RECIPE)
    data = _json(_args(h, "--fresh", "--json", "--recipe", str(recipe), "--cell", "answer"))
    assert data["first_bad"]["commit"] == h.main[BREAKS] and data["exact"]
    bad = {s["version"]: s for s in data["steps"]}[h.main[BREAKS]]
    assert bad["verdict"] == "bad" and bad["detail"].startswith("fail: AssertionError")
    run_dir = Path(data["journal"]).parent / h.main[BREAKS] / "run0"
    (record,) = [json.loads(p.read_text()) for p in (run_dir / "envs").glob("*.json")]
    (req,) = record["requirements"]  # the recipe leg's ticker, replaced by the commit's wheel
    assert req.startswith("ticker @ file://") and h.main[BREAKS] in req
    # Its side is reproduced from the step's run directory, a run like any matrix's.
    check = data["reproduce"][1]["check"]
    assert check.startswith(f"vllmdiag report {run_dir}")
    drafted = CliRunner().invoke(app, ["report", str(run_dir)])
    assert drafted.exit_code == 0, drafted.output
    assert "## Reproduction" in drafted.stdout and "AssertionError" in drafted.stdout


def test_prebuilt_environments_as_per_commit_entries(h: History, tmp_path: Path) -> None:
    """A machine with no index: each commit's entry is an environment built beforehand
    (as the device host's staged releases are), linked under the commit's sha."""
    entries = tmp_path / "envs"
    entries.mkdir()
    uv_bin = uv.find_uv_bin()
    for sha in (h.main[SLOWS - 1], h.main[SLOWS]):
        venv = tmp_path / f"venv-{sha[:7]}"
        (wheel,) = (h.wheels / sha).glob("*.whl")
        subprocess.run([uv_bin, "venv", "-q", str(venv)], check=True)
        subprocess.run(
            [uv_bin, "pip", "install", "-q", "--python", str(venv / "bin/python"), str(wheel)],
            check=True,
        )
        (entries / sha).symlink_to(venv)
    args = _args(h, good=h.main[SLOWS - 1], bad=h.main[SLOWS])
    args[args.index("--wheels") + 1] = entries.as_uri() + "/{commit}"
    args.remove("--variant")
    args.remove("cpu")
    data = _json([*args, "--metric", "elapsed_ms", "--json", "--", "python", "-c", TIMED])
    assert data["first_bad"]["commit"] == h.main[SLOWS] and data["exact"]
    assert [len(s["values"]) for s in data["steps"]] == [3, 3]
    assert all("the prebuilt environment" in s["detail"] or "ratio" in s["detail"]
               for s in data["steps"])  # fmt: skip
    assert data["reproduce"][1]["install"] == [
        f"# the prebuilt environment {(tmp_path / f'venv-{h.main[SLOWS][:7]}').resolve()}"
    ]


REPORT_RUN = FIXTURES / "report" / "thrmma-cpu"


def test_report_names_the_commit_from_the_json_or_the_journal(h: History, tmp_path: Path) -> None:
    data = _json(_args(h, "--json", "--", "python", "-c", ANSWER))
    saved = tmp_path / "bisect.json"
    saved.write_text(json.dumps(data))
    sha = h.main[BREAKS]
    for given in (saved, Path(data["journal"])):
        result = CliRunner().invoke(app, ["report", str(REPORT_RUN), "--bisect", str(given)])
        assert result.exit_code == 0, result.output
        body = result.stdout
        assert "## Bisection\n" in body
        named = (
            f"`{sha}` `Return the answer off by one (#117)` (2025-06-01T10:20:00+02:00, PR #117)"
        )
        assert f"- First bad commit: {named}" in body
        assert f"the first bad commit is {named}." in body  # in the summary too
        assert f"Reproduce the first bad side (`{sha[:10]}`)" in body
    unfinished = tmp_path / "journal.jsonl"
    unfinished.write_text("\n".join(Path(data["journal"]).read_text().splitlines()[:3]) + "\n")
    result = CliRunner().invoke(app, ["report", str(REPORT_RUN), "--bisect", str(unfinished)])
    assert result.exit_code == 1 and "neither a bisect result" in result.stderr
    assert "Traceback" not in result.output


def test_cli_refuses_commit_options_on_a_release_bisection() -> None:
    result = CliRunner().invoke(
        app, ["bisect", "ticker", "--good", "1", "--bad", "2", "--wheels", "x", "--", "true"]
    )
    assert result.exit_code == 1 and "--wheels is for a bisection by commit" in result.output


@pytest.fixture
def h(history: History) -> History:
    return history
