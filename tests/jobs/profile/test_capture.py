"""Real captures on the CPU: the torch launcher, py-spy, nsys's fallback, the CLI, recipes.

A CPU run has no GPU kernels, so its diff must refuse (a failed capture, not a zero);
everything up to that point is real: subprocesses, torch.profiler, Kineto files, py-spy.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import REPO
from vllmdiag.cli.app import app
from vllmdiag.jobs.profile.capture import Backend
from vllmdiag.jobs.profile.capture_task import Workload, capture
from vllmdiag.jobs.profile.events import CaptureFallback, CaptureFinished, CaptureStarted
from vllmdiag.jobs.profile.run import LegTarget, capture_legs
from vllmdiag.readers.traces import kineto, leg, pyspy
from vllmdiag.readers.traces.leg import CaptureError

pytest.importorskip("torch")

DECODE = REPO / "examples" / "decode_loop.py"
SMALL = ("--device", "cpu", "--layers", "2", "--hidden", "64", "--heads", "4", "--batch", "2",
         "--max-len", "64", "--vocab", "500")  # fmt: skip
PY = Path(sys.executable)


def _python_at(bin_dir: Path) -> None:
    """A leg's ``bin/python`` that runs this interpreter with its own environment: a
    symlink would lose a venv's site-packages (``pyvenv.cfg`` sits beside the real one)."""
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(str(PY))} "$@"\n')
    python.chmod(0o755)


def _work(steps: int = 6, *extra: str) -> Workload:
    return Workload(script=DECODE, script_args=(*SMALL, *extra), warmup=2, steps=steps)


def _events(run: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (run / "run.jsonl").read_text().splitlines()]


def test_two_legs_torch_capture_and_nsys_fallback(tmp_path: Path) -> None:
    legs = [LegTarget("manual", PY), LegTarget("sdpa", PY)]
    w = Workload(script=DECODE, script_args=SMALL, warmup=2, steps=6)
    seen: list[object] = []
    with pytest.raises(CaptureError, match="zero GPU kernels"):  # a CPU run: no diff
        capture_legs(legs, w, [Backend.NSYS], out=tmp_path, observer=seen.append)
    from vllmdiag.jobs.profile.results import load_run

    run = load_run(tmp_path)
    assert run is not None
    by = {(c.leg, c.backend): c for c in run.captures}
    kinds = [e["event"] for e in _events(tmp_path)]
    # each capture is an ordinary cell of the runner: one journal, the runner's and the
    # profile's events in it
    assert kinds[:2] == ["run_started", "profile_started"] and kinds[-1] == "run_finished"
    assert not (tmp_path / "journal.jsonl").exists()
    finished = [e["result"] for e in _events(tmp_path) if e["event"] == "cell_finished"]
    assert [r["id"] for r in finished] == [
        "manual.nsys", "manual.torch", "sdpa.nsys", "sdpa.torch"][-len(finished):]  # fmt: skip
    if shutil.which("nsys") is None:
        # no nsys here: the capture says so, leaves a FAILED marker, and torch takes over
        failed = by[("manual", Backend.NSYS)]
        assert not failed.ok and "no nsys" in (failed.reason or "")
        assert (failed.out / "FAILED.txt").exists()
        assert by[("manual", Backend.TORCH)].ok and by[("sdpa", Backend.TORCH)].ok
        assert kinds.count("capture_fallback") == 2
        falls = [e for e in seen if isinstance(e, CaptureFallback)]
        assert [(f.side, f.failed, f.instead) for f in falls] == [
            ("manual", Backend.NSYS, Backend.TORCH),
            ("sdpa", Backend.NSYS, Backend.TORCH),
        ]
    # the live view and the journal saw the same events
    own = [e for e in seen if isinstance(e, (CaptureStarted, CaptureFinished, CaptureFallback))]
    assert len(own) == sum(k.startswith("capture_") for k in kinds)
    torch_cap = by[("manual", Backend.TORCH)]
    assert torch_cap.out == tmp_path / "cells" / "manual.torch" / "out"
    assert torch_cap.log == tmp_path / "cells" / "manual.torch" / "log.txt"
    trace = torch_cap.out / "trace.json.gz"
    meta = json.loads((torch_cap.out / "meta.json").read_text())
    assert meta["steps"] == 6 and meta["tokens"] == 12 and meta["mode"] == "steps"
    s = kineto.read(trace)
    # the launcher's phases and steps are in the trace; only the measured steps are
    assert [st.name for st in s.steps] == [f"vllmdiag:step#{i}" for i in range(2, 8)]
    assert s.ranges["vllmdiag:measured"][0] == 1
    assert any(name.startswith("aten::") for name in s.cpu_ops)
    assert s.kernel_count == 0
    with pytest.raises(CaptureError, match="zero GPU kernels"):
        leg.load(torch_cap.out)


def test_plain_script_runs_whole_under_the_profiler(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(
        "import sys, torch\nx = torch.ones(64, 64)\nfor _ in range(3):\n    x = x @ x\n"
        "open(sys.argv[1], 'w').write('done')\n"
    )
    w = Workload(script=script, script_args=("{out_dir}/marker.txt",))
    res = capture("plain", PY, w, tmp_path / "plain", "torch")
    assert res.out == tmp_path / "plain" / "torch" and res.backend is Backend.TORCH
    assert res.ok, res.reason
    assert (res.out / "marker.txt").read_text() == "done"  # {out_dir}: the capture's dir
    meta = json.loads((res.out / "meta.json").read_text())
    assert meta["mode"] == "script"
    s = kineto.read(res.out / "trace.json.gz")
    assert s.cpu_ops["aten::mm"][0] == 3


def test_failing_workload_says_why(tmp_path: Path) -> None:
    script = tmp_path / "boom.py"
    script.write_text("raise SystemExit('no GPU here, and this workload needs one')\n")
    res = capture("boom", PY, Workload(script=script), tmp_path / "boom", "torch")
    assert not res.ok
    assert "exited 1" in (res.reason or "") and "needs one" in (res.reason or "")
    assert not list(res.out.glob("trace*"))


@pytest.mark.skipif(shutil.which("py-spy") is None, reason="py-spy is not installed")
def test_pyspy_capture_of_the_cpu_side(tmp_path: Path) -> None:
    res = capture("cpu", PY, _work(steps=150), tmp_path / "cpu", "py-spy")
    assert res.ok, res.reason
    prof = pyspy.read(res.out / "profile.pyspy.txt")
    assert prof.samples > 10
    assert any("decode_step" in f for f in prof.inclusive)


def test_cli_capture_on_existing_envs_refuses_a_cpu_diff(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        [
            "profile",
            "capture",
            "--leg",
            f"a={PY}",
            "--leg",
            f"b={PY}",
            "--script",
            str(DECODE),
            "--warmup",
            "1",
            "--steps",
            "3",
            "--out",
            str(out),
            "--",
            *SMALL,
        ],
    )
    assert res.exit_code == 1, res.output
    assert "zero GPU kernels" in res.output
    run = json.loads((out / "profile.json").read_text())
    assert [c["ok"] for c in run["captures"]] == [True, True]
    events = _events(out)
    kinds = [e["event"] for e in events]
    assert kinds[:2] == ["run_started", "profile_started"] and kinds[-1] == "run_finished"
    # each side one cell: started, captured, judged, in that order
    per_cell = [k for k in kinds if k in ("cell_started", "capture_started", "capture_finished",
                                          "cell_finished")]  # fmt: skip
    assert per_cell == ["cell_started", "capture_started", "capture_finished", "cell_finished"] * 2
    finished = [e["result"] for e in events if e["event"] == "cell_finished"]
    assert [(r["id"], r["outcome"]) for r in finished] == [("a.torch", "pass"), ("b.torch", "pass")]
    log = (out / "cells" / "a.torch" / "log.txt").read_text()
    header = log.splitlines()[:2]
    assert header[0].startswith("# vllmdiag: cell started ") and header[1].startswith("$ ")
    assert log.count("# vllmdiag: cell started") == 1  # one header: the command as wrapped


def test_profile_recipe_legs(tmp_path: Path) -> None:
    shutil.copy(DECODE, tmp_path / "decode_loop.py")
    recipe = tmp_path / "cpu-decode.yaml"
    recipe.write_text(
        "name: cpu-decode\n"
        "question: does the fused attention change the decode loop's CPU profile?\n"
        f"legs:\n  a:\n    path: {PY}\n  b:\n    path: {PY}\n"
        "baseline:\n  leg: a\n"
        "workloads:\n  decode:\n    command: ['{python}', '{recipe_dir}/decode_loop.py', "
        + ", ".join(f"'{t}'" for t in SMALL)
        + "]\n"
    )
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app, ["profile", str(recipe), "--legs", "a", "b", "--steps", "3", "--out", str(out)]
    )
    assert res.exit_code == 1, res.output
    assert "zero GPU kernels" in res.output
    events = _events(out)
    kinds = [e["event"] for e in events]
    assert kinds[:2] == ["run_started", "profile_started"] and kinds[-1] == "run_finished"
    assert kinds.count("capture_finished") == kinds.count("cell_finished") == 2
    finished = [e["result"] for e in events if e["event"] == "cell_finished"]
    assert [(r["id"], r["outcome"]) for r in finished] == [
        ("r1.a.decode.torch", "pass"), ("r1.b.decode.torch", "pass")]  # fmt: skip
    assert (out / "cells" / "r1.a.decode.torch" / "out" / "trace.json.gz").exists()
    bad = CliRunner().invoke(app, ["profile", str(recipe), "--legs", "a", "c"])
    assert bad.exit_code == 1 and "neither a leg nor an arm" in bad.output


def test_vllm_step_spellings_in_a_real_torch_trace(tmp_path: Path) -> None:
    """record_function ranges named as vLLM's workers name them, through torch.profiler."""
    script = tmp_path / "steps.py"
    script.write_text(
        "import torch\n"
        "from torch.profiler import record_function\n"
        "x = torch.ones(32, 32)\n"
        "names = ['execute_context_2(1024)_generation_0(0)'] + "
        "['execute_context_0(0)_generation_8(8)'] * 5 + "
        "['execute_context_1(4)_generation_60(60)']\n"
        "for n in names:\n"
        "    with record_function(n):\n"
        "        y = x @ x\n"
    )
    res = capture("steps", PY, Workload(script=script), tmp_path / "steps", "torch")
    assert res.ok, res.reason
    s = kineto.read(res.out / "trace.json.gz")
    kinds = [st.kind for st in s.steps]
    assert kinds == ["prefill-heavy"] + ["decode-only"] * 5 + ["mixed"]
    assert [st.output_tokens for st in s.steps] == [0, 8, 8, 8, 8, 8, 60]


def test_nsys_that_cannot_finalize_leaves_no_result(tmp_path: Path) -> None:
    """The lent H200's nsys wrote a .qdstrm and no report; a stand-in program does the
    same here, so the handling of that case is exercised where nsys is absent."""
    bin_dir = tmp_path / "leg" / "bin"
    bin_dir.mkdir(parents=True)
    _python_at(bin_dir)
    nsys = bin_dir / "nsys"
    nsys.write_text(
        "#!/bin/sh\n"
        'while [ "$1" != "-o" ]; do shift; done\n'
        'echo partial > "$2.qdstrm"\n'
        "echo 'Importer error: cannot finalize report' >&2\n"
        "exit 1\n"
    )
    nsys.chmod(0o755)
    res = capture("h200", bin_dir / "python", _work(), tmp_path / "out", "nsys")
    assert not res.ok
    assert "could not finalize a report" in (res.reason or "")
    assert "cannot finalize" in (res.reason or "")
    assert not list(res.out.glob("*.qdstrm")) and not list(res.out.glob("*.sqlite"))
    assert (res.out / "failed" / "report.qdstrm").exists()
    assert (res.out / "FAILED.txt").read_text().startswith("nsys wrote report.qdstrm")


def _cpu_recipe(tmp_path: Path) -> Path:
    shutil.copy(DECODE, tmp_path / "decode_loop.py")
    recipe = tmp_path / "cpu-decode.yaml"
    recipe.write_text(
        "name: cpu-decode\n"
        "question: does a flag change the decode loop's CPU profile?\n"
        f"legs:\n  a:\n    path: {PY}\n  b:\n    path: {PY}\n"
        "baseline:\n  leg: a\n"
        "workloads:\n  decode:\n    command: ['{python}', '{recipe_dir}/decode_loop.py', "
        + ", ".join(f"'{t}'" for t in SMALL)
        + "]\n"
    )
    return recipe


def test_a_profile_refuses_to_start_while_another_job_measures(tmp_path: Path) -> None:
    """Both ways of profiling take the node lock, before anything is built or written."""
    from vllmdiag.services.locks import file_lock
    from vllmdiag.services.paths import node_lock_path

    recipe = _cpu_recipe(tmp_path)
    runs = tmp_path / "runs"
    capture_args = ["profile", "capture", "--leg", f"a={PY}", "--leg", f"b={PY}", "--script",
                    str(DECODE), "--runs-root", str(runs), "--", *SMALL]  # fmt: skip
    with file_lock(node_lock_path()):
        for args in (["profile", str(recipe), "--legs", "a", "b", "--runs-root", str(runs)],
                     capture_args):  # fmt: skip
            res = CliRunner().invoke(app, args)
            assert res.exit_code == 1, res.output
            assert "the node lock is held by another vllmdiag process" in res.output
            assert "Traceback" not in res.output
    assert not runs.exists()


def test_a_profile_with_wait_queues_behind_the_holder(tmp_path: Path) -> None:
    import threading
    import time

    from vllmdiag.services.locks import file_lock
    from vllmdiag.services.paths import node_lock_path

    recipe = _cpu_recipe(tmp_path)
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with file_lock(node_lock_path()):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(10)
    timer = threading.Timer(1.0, release.set)
    timer.start()
    start = time.monotonic()
    out = tmp_path / "run"
    try:
        res = CliRunner().invoke(app, ["profile", str(recipe), "--legs", "a", "b", "--steps", "2",
                                       "--wait", "--out", str(out)])  # fmt: skip
    finally:
        release.set()
        thread.join()
    assert time.monotonic() - start >= 1.0
    assert "waiting for the node lock" in res.output
    assert res.exit_code == 1 and "zero GPU kernels" in res.output  # it ran: a CPU capture
    assert [e["event"] for e in _events(out)].count("cell_finished") == 2


def test_a_recipe_side_whose_nsys_capture_fails_is_captured_with_torch(tmp_path: Path) -> None:
    """The fallback is a follow-up cell of the same run: journaled, judged and resumed
    like the others. The leg's nsys (a stand-in) cannot finalize its report, as the lent
    H200's could not."""
    bin_dir = tmp_path / "leg" / "bin"
    bin_dir.mkdir(parents=True)
    _python_at(bin_dir)
    nsys = bin_dir / "nsys"
    nsys.write_text(
        '#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\n'
        'echo partial > "$2.qdstrm"\necho "cannot finalize report" >&2\nexit 1\n'
    )
    nsys.chmod(0o755)
    recipe = _cpu_recipe(tmp_path)
    recipe.write_text(recipe.read_text().replace(f"path: {PY}", f"path: {bin_dir / 'python'}"))
    out = tmp_path / "run"
    args = ["profile", str(recipe), "--legs", "a", "b", "-c", "nsys", "--steps", "2", "--json"]
    res = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert res.exit_code == 1 and "zero GPU kernels" in res.output  # a CPU run: no diff
    events = _events(out)
    finished = [e["result"] for e in events if e["event"] == "cell_finished"]
    assert [(r["id"], r["outcome"]) for r in finished] == [
        ("r1.a.decode.nsys", "fail"), ("r1.a.decode.torch", "pass"),
        ("r1.b.decode.nsys", "fail"), ("r1.b.decode.torch", "pass")]  # fmt: skip
    falls = [e for e in events if e["event"] == "capture_fallback"]
    assert [(f["side"], f["failed"], f["instead"]) for f in falls] == [
        ("a", "nsys", "torch"), ("b", "nsys", "torch")]  # fmt: skip
    assert "could not finalize" in falls[0]["reason"]
    assert [e["total"] for e in events if e["event"] == "cell_started"] == [2, 3, 3, 4]
    caps = json.loads((out / "profile.json").read_text())["captures"]
    assert [(c["leg"], c["backend"], c["ok"]) for c in caps] == [
        ("a", "nsys", False),
        ("a", "torch", True),
        ("b", "nsys", False),
        ("b", "torch", True),
    ]
    assert (out / "cells" / "r1.a.decode.nsys" / "out" / "failed" / "report.qdstrm").exists()
    # resumed, every finished capture is kept, the fallbacks included
    again = CliRunner().invoke(app, [*args, "--resume", str(out)])
    assert again.exit_code == 1, again.output
    kinds = [e["event"] for e in _events(out)]
    assert kinds.count("cell_reused") == 4 and kinds.count("capture_started") == 4
