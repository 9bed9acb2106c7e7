"""Recipe files for the tests: one leg, ``here``, the running python (a ``path:`` leg, so
nothing is built), and the process-tree workload the tests that stop and kill runs use."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

#: The one leg: this python, as a ``path:`` leg.
HERE = f"legs:\n  here: {{path: {sys.executable}}}\n"


def write_recipe(
    where: Path,
    body: str,
    *,
    name: str = "t",
    question: str = "q",
    file: str = "recipe.yaml",
    scripts: Mapping[str, str] | None = None,
) -> Path:
    """``where/file``: a recipe called ``name`` asking ``question`` (YAML as written: quote
    it where it needs quoting), its leg ``here``, then ``body`` (dedented: the baseline,
    workloads, arms, ...). ``scripts`` are written beside it, for commands that name
    ``{recipe_dir}/<script>``."""
    for script, text in (scripts or {}).items():
        (where / script).write_text(textwrap.dedent(text))
    path = where / file
    path.write_text(f"name: {name}\nquestion: {question}\n{HERE}" + textwrap.dedent(body))
    return path


#: A workload that starts a tree a stop must end: a child that ignores TERM and a
#: grandchild that left the session (setsid); their pids go to ``out/pids``. It finishes
#: at once when ``{recipe_dir}/quick`` exists (a resume after the stop).
TREE = """\
import os, subprocess, sys, time
out = sys.argv[1]
if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
    print("quick"); sys.exit(0)
kid = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
esc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
    start_new_session=True)
open(os.path.join(out, "pids"), "w").write(f"{os.getpid()} {kid.pid} {esc.pid}")
print("engine up", os.environ.get("CUDA_VISIBLE_DEVICES"), flush=True)
time.sleep(600)
"""


def tree_recipe(where: Path, *, name: str, question: str, workloads: int = 1) -> Path:
    """A recipe whose cells run :data:`TREE`: the baseline and an ``eager`` arm over
    workloads ``w1`` ... ``wN``."""
    command = "{python} {recipe_dir}/tree.py {out_dir} {recipe_dir}/quick {flags}"
    wls = "".join(f'  w{i}: {{command: "{command}"}}\n' for i in range(1, workloads + 1))
    body = (
        "baseline: {leg: here}\narms:\n  - {name: eager, flag: --enforce-eager}\n"
        f"workloads:\n{wls}timeout: 300\n"
    )
    return write_recipe(where, body, name=name, question=question, scripts={"tree.py": TREE})


def start_matrix(recipe: Path, run_dir: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``vllmdiag matrix RECIPE --out RUN_DIR --grace 1 EXTRA...`` as its own process (so
    that a test can signal or kill it)."""
    cmd = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()", "matrix"]
    return subprocess.Popen(
        [*cmd, str(recipe), "--out", str(run_dir), "--grace", "1", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
