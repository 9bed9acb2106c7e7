"""A metric bisection by commit whose two ends are the two staged releases on the host
(0.25.0 in ``VLLMDIAG_VLLM_PYTHON_2``'s venv, 0.26.0 in ``VLLMDIAG_VLLM_PYTHON``'s): a
two-commit history standing for them, a per-commit "index" of two entries (the host has
no index: each entry is the release's prebuilt environment), each end measured twice
with a real engine under the node lock (``--repeat 2``: one engine start is about 110 s
there, and four fit in a ten-minute call where the default three's six do not), and the
endpoint noise rule applied to real noise. Either outcome is real and both are checked:
the ends differ beyond their noise (the bisection names the 0.26 commit) or they do not
(it refuses, with both ends' four values).

    VLLMDIAG_VLLM_PYTHON=/opt/torch/.venv/bin/python3 VLLMDIAG_VLLM_PYTHON_2=/tmp/v025/bin/python \\
    VLLMDIAG_TINY_MODELS=/tmp/models python -m pytest tests/device/test_bisect_device.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.device.gpu import gpu_apps
from vllmdiag.cli.app import app

CHECK = """\
import json, os, shutil, subprocess, sys, tempfile
import vllm
print(f"vllm_version={vllm.__version__}", flush=True)
out = os.path.join(tempfile.mkdtemp(), "throughput.json")
env = {**os.environ, "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
       "VLLM_USE_FLASHINFER_SAMPLER": "0"}
done = subprocess.run([shutil.which("vllm"), "bench", "throughput", "--model", sys.argv[1],
    "--dataset-name", "random", "--random-input-len", "512", "--random-output-len", "512",
    "--num-prompts", "500", "--max-model-len", "2048", "--seed", "0",
    "--output-json", out], env=env)
if done.returncode != 0:
    sys.exit(done.returncode)
print(f"tokens_per_s={json.load(open(out))['tokens_per_second']}")
"""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "d", "GIT_AUTHOR_EMAIL": "d@example.org",
           "GIT_COMMITTER_NAME": "d", "GIT_COMMITTER_EMAIL": "d@example.org"}  # fmt: skip
    done = subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def test_a_metric_bisection_between_the_two_staged_releases(
    tmp_path: Path, vllm_python: Path, tiny_models: Path, keep: Path | None
) -> None:
    older = os.environ.get("VLLMDIAG_VLLM_PYTHON_2")
    if not older or not Path(older).exists():
        pytest.skip("set VLLMDIAG_VLLM_PYTHON_2 to the second staged release's python")
    repo = tmp_path / "vllm"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for version in ("0.25.0", "0.26.0"):
        (repo / "VERSION").write_text(version + "\n")
        _git(repo, "add", "VERSION")
        _git(
            repo, "commit", "-q", "-m", f"vLLM {version}, as staged on this host (#{version[2:4]})"
        )
        _git(repo, "tag", f"v{version}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    entries = tmp_path / "entries"
    entries.mkdir()
    for sha, python in zip(shas, (Path(older), vllm_python), strict=True):
        (entries / sha).symlink_to(python.parent.parent)  # the venv the python belongs to
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    args = ["bisect", "vllm", "--by", "commit", "--good", "v0.25.0", "--bad", "v0.26.0"]
    args += ["--repo", str(repo), "--wheels", entries.as_uri() + "/{commit}"]
    args += ["--metric", "tokens_per_s", "--repeat", "2", "--timeout", "280", "--fresh", "--json"]
    result = CliRunner().invoke(
        app, [*args, "--", "python", str(script), str(tiny_models / "llama")]
    )
    if keep is not None:
        (keep / "bisect-two-releases.txt").write_text(result.output)
        journals = list(Path(os.environ["VLLMDIAG_CACHE"]).glob("bisect/*/journal.jsonl"))
        for journal in journals:
            shutil.copytree(
                journal.parent, keep / "bisect" / journal.parent.name, dirs_exist_ok=True
            )
    assert gpu_apps() == []
    if result.exit_code == 0:
        data = json.loads(result.stdout)
        assert data["first_bad"]["commit"] == shas[1] and data["last_good"]["commit"] == shas[0]
        assert data["derived"] and data["threshold"] != 1
        steps = {s["version"]: s for s in data["steps"]}
        assert [len(steps[s]["values"]) for s in shas] == [2, 2]
        assert all(v > 0 for s in shas for v in steps[s]["values"])
        logs = Path(data["journal"]).parent
        for sha, version in zip(shas, ("0.25.0", "0.26.0"), strict=True):
            for run in ("run0", "run1"):
                step_log = logs / sha / "cells" / run / "log.txt"
                assert f"vllm_version={version}" in step_log.read_text()
    else:
        said = " ".join(result.output.split())
        assert "the two ends do not differ beyond their noise" in said, result.output
        error = said[said.index("the two ends do not differ") :]
        values = re.findall(r"\(([0-9.e+, ]+)\)", error)
        assert len(values) >= 2 and all(len(v.split(",")) == 2 for v in values[-2:]), error
