"""A cell that hangs past its timeout, for real: its workload starts a child Python that
waits on a lock in a named function while the parent sleeps in another, both past a short
timeout. Before the kill, py-spy dumps both into the cell's hang/ directory; the root
cause names the timeout, the start-up phase the log got through, the silence and the
stuck frames; the tree is gone after."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.observe import gone_within
from tests.support.paths import REPO
from tests.support.recipes import write_recipe
from vllmdiag import MatrixOptions, RunOptions, codec, run_matrix
from vllmdiag.cli.app import app
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.readers.fingerprint.parse import fingerprint_file
from vllmdiag.readers.fingerprint.startup import timeline
from vllmdiag.services.config import load_recipe
from vllmdiag.spine.runner import hangdump

PY_SPY = hangdump.find_py_spy()
needs_py_spy = pytest.mark.skipif(PY_SPY is None, reason="py-spy is not installed")

#: vLLM 0.26's own start-up lines (their shape, from the device fixtures), stamped now;
#: then the engine goes silent as the real flashinfer_cutlass cell did.
WORKLOAD = """
import os, subprocess, sys, threading, time
from datetime import datetime

def say(where, text):
    stamp = datetime.now().strftime("%m-%d %H:%M:%S")
    print(f"(EngineCore pid={os.getpid()}) INFO {stamp} [{where}] {text}", flush=True)

def wait_for_engine_lock():
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()

def stuck_in_engine_loop():
    time.sleep(600)

if sys.argv[1] == "child":
    wait_for_engine_lock()
else:
    kid = subprocess.Popen([sys.executable, __file__, "child", "VLLM::EngineCore"])
    open(os.path.join(sys.argv[2], "kid"), "w").write(str(kid.pid))
    say("core.py:116", "Initializing a V1 LLM engine (v0.26.0) with config: model='tiny'")
    say("model_runner.py:305", "Model loading took 0.03 GiB and 0.5 seconds")
    say("monitor.py:53", "torch.compile took 16.31 s in total")
    stuck_in_engine_loop()
"""


def _recipe(tmp_path: Path, timeout: float) -> Path:
    body = f"""\
    baseline: {{leg: here}}
    workloads:
      hang: {{command: ["{{python}}", "{{recipe_dir}}/hang.py", "parent", "{{out_dir}}"]}}
    timeout: {timeout}
    """
    return write_recipe(
        tmp_path, body, name="hang", question="where does it hang?", scripts={"hang.py": WORKLOAD}
    )


@needs_py_spy
def test_a_hung_cell_is_dumped_before_the_kill_and_says_where_it_hung(tmp_path: Path) -> None:
    report = run_matrix(
        load_recipe(_recipe(tmp_path, 4)),
        MatrixOptions(out=tmp_path / "run", run=RunOptions(grace_s=1)),
    )
    cell = report.cells[0]
    cell_dir = tmp_path / "run/cells/r1.baseline.hang"
    assert cell.outcome is Outcome.TIMEOUT and "killed after 4s" in cell.reason
    kid = int((cell_dir / "out/kid").read_text())
    parent = cell.hang.processes[0].pid if cell.hang else 0
    # the dumps: one file per Python process, each naming the function it waits in
    assert "wait_for_engine_lock" in (cell_dir / f"hang/py-spy-{kid}.txt").read_text()
    assert "stuck_in_engine_loop" in (cell_dir / f"hang/py-spy-{parent}.txt").read_text()
    hang = cell.hang
    assert hang is not None and hang.timeout_s == 4 and hang.py_spy
    assert {p.pid for p in hang.processes if p.dumped} == {parent, kid}
    # the stuck process is the engine core (the child), read at its own frames
    assert hang.stuck is not None and hang.stuck.pid == kid
    assert [f.function for f in hang.stuck.frames[:2]] == ["wait_for_engine_lock", "<module>"]
    assert hang.after_phase == "torch.compile" and hang.after_s == 16.31
    assert hang.silent_s is not None and 3.0 <= hang.silent_s <= 6.0
    # the root cause says all of it, in one line a user reads
    rc = cell.root_cause
    assert rc is not None and rc.type == "Timeout" and rc.evidence == "hang-dump"
    assert "killed at its 4 s timeout, after torch.compile (16.31 s)" in (rc.message or "")
    assert "log silent for" in (rc.message or "") and "wait_for_engine_lock" in (rc.message or "")
    assert rc.signature == "Timeout after torch.compile in wait_for_engine_lock (hang.py)"
    assert rc.origin == "unknown" and rc.raised_in == "script" and rc.why
    # the tree is gone
    assert gone_within(kid, 5) and gone_within(parent, 5)
    # the start-up timeline ends at the kill, with the silence, not at the last line
    startup = fingerprint_file(cell_dir / "log.txt").startup
    assert startup is not None and startup.killed and not startup.ready
    assert startup.phases[-1].end == "killed"
    assert startup.phases[-1].name == "after torch.compile: until the kill"
    assert startup.phases[-1].seconds >= 3
    assert startup.silent_s is not None and startup.silent_s >= 3
    # the value survives its file, and every output shows it
    saved = json.loads((cell_dir / "result.json").read_text())
    again = codec.load(CellResult, saved)
    assert again.hang == cell.hang and again.root_cause == cell.root_cause
    summary = (tmp_path / "run/summary.md").read_text()
    assert "wait_for_engine_lock" in summary and "after torch.compile (16.31 s)" in summary
    drafted = CliRunner().invoke(
        app, ["report", str(tmp_path / "run"), "--out", str(tmp_path / "issue.md")]
    )
    assert drafted.exit_code == 0, drafted.output
    body = (tmp_path / "issue.md").read_text()
    assert "The cell hung: it was killed at its 4 s timeout, after torch.compile" in body
    assert "wait_for_engine_lock (" in body and "Raised in" not in body
    shown = CliRunner().invoke(app, ["triage", str(cell_dir / "log.txt")])
    assert shown.exit_code == 0, shown.output
    assert "killed at its 4 s timeout" in shown.output and "wait_for_engine_lock" in shown.output


@needs_py_spy
def test_matrix_json_carries_the_hang(tmp_path: Path) -> None:
    out = CliRunner().invoke(
        app, ["matrix", str(_recipe(tmp_path, 3)), "--out", str(tmp_path / "run"), "--json"]
    )
    cells = json.loads(out.stdout)["cells"]
    hang = cells[0]["hang"]
    assert hang["timeout_s"] == 3 and hang["stuck"]["frames"][0]["function"] == (
        "wait_for_engine_lock"
    )
    assert cells[0]["root_cause"]["type"] == "Timeout"


def test_without_py_spy_the_cell_still_times_out_cleanly_with_a_note(tmp_path: Path) -> None:
    missing = tmp_path / "no-py-spy"
    os.environ[hangdump.PY_SPY_VAR] = str(missing)
    try:
        report = run_matrix(
            load_recipe(_recipe(tmp_path, 3)),
            MatrixOptions(out=tmp_path / "run", run=RunOptions(grace_s=1)),
        )
    finally:
        del os.environ[hangdump.PY_SPY_VAR]
    cell = report.cells[0]
    kid = int((tmp_path / "run/cells/r1.baseline.hang/out/kid").read_text())
    assert cell.outcome is Outcome.TIMEOUT and cell.hang is not None
    assert cell.hang.stuck is None and cell.hang.py_spy == ""
    assert [n for n in cell.hang.notes if "py-spy not found" in n] == [
        f"py-spy not found (install vllmdiag's dependencies, or set {hangdump.PY_SPY_VAR} "
        "to the py-spy binary): no stacks were dumped"
    ]
    rc = cell.root_cause
    assert rc is not None and rc.evidence == "timeout"
    assert "no stack: py-spy not found" in (rc.message or "")
    assert "after torch.compile (16.31 s)" in (rc.message or "")
    assert gone_within(kid, 5)


@needs_py_spy
def test_what_py_spy_cannot_read_is_a_note_and_the_rest_is_dumped(tmp_path: Path) -> None:
    """A process py-spy refuses (here: one that is not Python, under a name that looks
    like it) is a note in its file; the Python process beside it is dumped."""
    fake = tmp_path / "python3.99"
    shutil.copy("/bin/sleep", fake)
    import subprocess

    sleeper = subprocess.Popen([str(fake), "60"])
    py = subprocess.Popen(
        [sys.executable, "-c", "import time\ndef napping():\n time.sleep(60)\nnapping()"]
    )
    try:
        time.sleep(0.5)
        report = hangdump.dump_tree(
            py.pid,
            {py.pid, sleeper.pid},
            tmp_path,
            timeout_s=1,
            killed_at="2026-12-02T03:00:00.000",
            silent_s=1.0,
        )
    finally:
        sleeper.kill()
        py.kill()
        sleeper.wait()
        py.wait()
    notes = {p.pid: p.note for p in report.processes}
    assert notes[py.pid] is None
    assert notes[sleeper.pid] is not None and "not a Python process" in notes[sleeper.pid]
    assert "napping" in (tmp_path / f"hang/py-spy-{py.pid}.txt").read_text()
    assert "no stack:" in (tmp_path / f"hang/py-spy-{sleeper.pid}.txt").read_text()
    assert report.stuck is not None and report.stuck.frames[0].function == "napping"
    assert hangdump.load(tmp_path) == report


@needs_py_spy
def test_the_node_runner_dumps_on_its_node_and_serves_the_dumps(tmp_path: Path) -> None:
    """A Ray node's runner (its plain-Python side, run here as Ray would run it) dumps a
    cell that times out on its node, and lists and serves the dumps for the head."""
    from vllmdiag.adapters.cluster.node_runner import NodeRunner
    from vllmdiag.spine.runner.executor import CellTask

    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent(WORKLOAD))
    runner = NodeRunner("test-node")
    cell_id = f"hang-{os.getpid()}"
    out = runner.scratch / "test-runs" / cell_id / "out"
    task = CellTask(
        cell_id,
        (sys.executable, str(script), "parent", str(out)),
        {"PATH": os.environ["PATH"]},
        out,
        tmp_path / "head-log.txt",
        timeout=3,
        grace_s=1,
    )
    runner.start(task)
    try:
        poll = runner.poll(cell_id, 0, 1 << 20, wait_s=60)
        assert poll.done is not None and poll.done.timed_out
        files = dict(runner.hang_files(cell_id))
        names = {Path(f).name for f in files}
        kid = int((out / "kid").read_text())
        assert {"hang.json", f"py-spy-{kid}.txt"} <= names
        dump = next(f for f in files if f.endswith(f"py-spy-{kid}.txt"))
        assert b"wait_for_engine_lock" in runner.read(dump, 0, 1 << 20)
        assert b"# vllmdiag: cell timed out" in runner.read(str(out.parent / "log.txt"), 0, 1 << 20)
        assert gone_within(kid, 5)
    finally:
        runner.forget(cell_id)


def test_a_real_start_up_killed_after_torch_compile_ends_at_the_kill() -> None:
    """vLLM 0.26's own log of a real H200 cell, cut where the flashinfer_cutlass cell went
    silent (right after torch.compile), then the line the runner ends a killed cell's log
    with: the timeline runs to the kill and keeps the silence."""
    real = REPO / "tests/fixtures/vllm026/shape/cells/r1.baseline.builtin/log.txt"
    lines = real.read_bytes().decode().split("\n")[:36]
    assert lines[-1].endswith("Initial profiling/warmup run took 0.26 s")
    lines.append(
        "# vllmdiag: cell timed out 2026-12-01T09:25:41.250 local time after 300 s; "
        "log silent 224.0 s"
    )
    t = timeline(lines)
    assert t is not None and t.killed and not t.ready and t.from_process_start
    assert t.total_s == 295  # 09:20:46 to 09:25:41, not to the last line (70 s)
    last = t.phases[-1]
    assert (last.name, last.end, last.seconds) == (
        "after torch.compile: until the kill",
        "killed",
        225,
    )
    done = t.last_completed()
    assert done is not None and done.name == "torch.compile" and done.reported_s == 13.49
    assert t.silent_s == 224.0
    assert t.state() == "never ready: killed at the timeout, log silent 224 s"
    # without the runner's line (a pasted log), it still ends at its last milestone
    plain = timeline(lines[:-1])
    assert plain is not None and not plain.killed and plain.total_s == 70
    assert plain.state() == "never ready"


def test_the_tree_is_ended_even_when_the_timeout_hook_fails(tmp_path: Path) -> None:
    from vllmdiag.services import proc

    seen: list[set[int]] = []

    def hook(root: int, pids: set[int]) -> None:
        seen.append(pids)
        raise RuntimeError("the hook broke")

    code = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "time.sleep(60)"
    )
    with pytest.raises(RuntimeError, match="the hook broke"):
        proc.run([sys.executable, "-c", code], timeout=1.5, grace_s=1, on_timeout=hook)
    assert len(seen) == 1 and len(seen[0]) == 2  # the child and its own child, both alive
    assert all(gone_within(pid, 5) for pid in seen[0])


@needs_py_spy
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run py-spy as another user",
)
def test_a_cell_py_spy_may_not_attach_to_times_out_cleanly_with_the_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """py-spy run as ``nobody`` against the cell's root-owned processes: the kernel
    refuses the attach, as it does where vllmdiag lacks CAP_SYS_PTRACE."""
    assert PY_SPY is not None
    place = Path(tempfile.mkdtemp(prefix="vllmdiag-pyspy-"))
    try:
        place.chmod(0o755)
        binary = place / "py-spy-real"
        shutil.copy(PY_SPY.resolve(), binary)
        binary.chmod(0o755)
        wrapper = place / "py-spy"
        wrapper.write_text(
            f'#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups {binary} "$@"\n'
        )
        wrapper.chmod(0o755)
        monkeypatch.setenv(hangdump.PY_SPY_VAR, str(wrapper))
        report = run_matrix(
            load_recipe(_recipe(tmp_path, 3)),
            MatrixOptions(out=tmp_path / "run", run=RunOptions(grace_s=1)),
        )
    finally:
        shutil.rmtree(place, ignore_errors=True)
    cell = report.cells[0]
    kid = int((tmp_path / "run/cells/r1.baseline.hang/out/kid").read_text())
    assert cell.outcome is Outcome.TIMEOUT and cell.hang is not None
    assert cell.hang.stuck is None
    notes = {p.note for p in cell.hang.processes}
    refused = "py-spy may not attach (permission denied)"
    assert notes and all(n is not None and n.startswith(refused) for n in notes)
    assert any(n.startswith(refused) for n in cell.hang.notes)
    rc = cell.root_cause
    assert rc is not None and rc.evidence == "timeout"
    assert f"no stack: {refused}" in (rc.message or "")
    text = (tmp_path / f"run/cells/r1.baseline.hang/hang/py-spy-{kid}.txt").read_text()
    assert f"no stack: {refused}" in text
    assert gone_within(kid, 5)


def test_fingerprint_shows_the_wait_until_the_kill(tmp_path: Path) -> None:
    real = REPO / "tests/fixtures/vllm026/shape/cells/r1.baseline.builtin/log.txt"
    lines = real.read_bytes().split(b"\n")[:36]
    lines.append(
        b"# vllmdiag: cell timed out 2026-12-01T09:25:41.250 local time after 300 s; "
        b"log silent 224.0 s"
    )
    log = tmp_path / "log.txt"
    log.write_bytes(b"\n".join(lines) + b"\n")
    shown = CliRunner().invoke(app, ["fingerprint", str(log)])
    assert shown.exit_code == 0, shown.output
    assert (
        "start-up: 295 s from process start (never ready: killed at the timeout, log silent "
        "224 s)" in shown.output
    )
    assert "after torch.compile: until the kill" in shown.output


def test_a_fresh_attempt_keeps_the_previous_attempts_dumps_apart(tmp_path: Path) -> None:
    from vllmdiag.spine.rundir import RunDir

    run = RunDir.create("t", out=tmp_path / "run", runs_root=tmp_path)
    run.prepare_cell("c1")
    cell = run.cell_dir("c1")
    (cell / "log.txt").write_text("first attempt\n")
    (cell / "hang").mkdir()
    (cell / "hang" / "hang.json").write_text("{}")
    run.prepare_cell("c1")
    assert (cell / "log.previous.txt").read_text() == "first attempt\n"
    assert (cell / "hang.previous" / "hang.json").is_file()
    assert not (cell / "hang").exists()
    assert hangdump.load(cell) is None  # a later judge never reads the old attempt's
