"""Real child processes: output kept in full, whole trees stopped on timeout."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

from tests.support import observe
from vllmdiag.services import proc

# A child that starts a grandchild ignoring SIGTERM (and one that left the process group
# with setsid), records their pids, then sleeps forever.
TREE = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    pids = sys.argv[1]
    ignore = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    a = subprocess.Popen([sys.executable, "-c", ignore])
    b = subprocess.Popen([sys.executable, "-c", ignore], start_new_session=True)
    with open(pids, "w") as fh:
        fh.write(f"{a.pid} {b.pid}")
    print("started", flush=True)
    time.sleep(600)
    """
)


def _wait_for(path: Path, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never written")


def test_timeout_kills_the_whole_tree_including_term_ignoring_grandchildren(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    log = tmp_path / "log.txt"
    start = time.monotonic()
    done = proc.run([sys.executable, "-c", TREE, str(pids)], timeout=3, grace_s=1, log=log)
    assert done.timed_out and not done.ok
    assert time.monotonic() - start < 15
    grandchildren = [int(p) for p in _wait_for(pids).split()]
    deadline = time.monotonic() + 5
    while any(observe.running(p) for p in grandchildren) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(observe.running(p) for p in grandchildren)
    assert "started" in log.read_text()


def test_leftovers_of_a_finished_child_are_stopped(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import subprocess, sys
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open(sys.argv[1], "w").write(str(p.pid))
        """
    )
    pid_file = tmp_path / "pid"
    done = proc.run([sys.executable, "-c", script, str(pid_file)], grace_s=1, capture=True)
    assert done.ok
    assert not observe.running(int(pid_file.read_text()))


def test_output_is_kept_in_full_and_interleaved(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    script = "import sys\nfor i in range(20000):\n    print(i); print('e', i, file=sys.stderr)"
    done = proc.run([sys.executable, "-c", script], log=log)
    assert done.rc == 0
    lines = log.read_text().splitlines()
    assert len(lines) == 40000 and "19999" in lines and "e 19999" in lines


def test_capture_and_exit_codes() -> None:
    done = proc.run([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], capture=True)
    assert (done.rc, done.stdout.strip(), done.ok) == (3, "out", False)


def test_missing_program_is_a_clear_error() -> None:
    import pytest

    from vllmdiag.errors import ProcessError

    with pytest.raises(ProcessError, match="cannot start"):
        proc.run(["/nonexistent/program"], capture=True)


def test_clean_environ_drops_leaking_variables() -> None:
    env = proc.clean_environ(
        {"VLLM_ATTENTION_BACKEND": "X", "PYTHONPATH": "/p", "HOME": "/h", "OMP_NUM_THREADS": "4"}
    )
    assert env == {"HOME": "/h"}
    kept = proc.clean_environ({"VLLM_X": "1"}, keep=["VLLM_X"])
    assert kept == {"VLLM_X": "1"}
    assert os.environ is not env
