"""nsys SQLite exports, py-spy raw output, the HTML picture and vLLM's profiler switch."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES, REPO
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.profile import vllm_flags
from vllmdiag.jobs.profile.diff import render
from vllmdiag.jobs.profile.diff import time_diff as diff
from vllmdiag.readers.traces import leg, nsys, pyspy

H200 = FIXTURES / "traces" / "h200"


def _nsys_db(
    path: Path, graph: bool, range_name: str = "execute_context_0(0)_generation_8(8)"
) -> None:
    """A export with the tables and columns ``nsys export --type sqlite`` writes (subset):
    names through StringIds, times in ns, graphNodeId on kernels replayed from graphs."""
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
            contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
            demangledName INTEGER, shortName INTEGER, graphNodeId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER,
            streamId INTEGER, correlationId INTEGER, copyKind INTEGER, bytes INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER,
            globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT,
            textId INTEGER, globalTid INTEGER);
        """
    )
    names = [
        "void flash::flash_fwd_kernel<int>(int)",
        "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT",
        "cudaLaunchKernel",
        "cudaGraphLaunch",
        range_name,
    ]
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(names)))
    t = 1_000_000
    for step in range(4):
        s0 = t
        for k in range(2):
            dur = 5_000 if k == 0 else 20_000
            node = 7 + k if graph else None
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,0,1,7,?,1,?,?,?)",
                       (t, t + dur, step * 10 + k, k, k, node))  # fmt: skip
            if not graph:
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,1,?,2)",
                           (t - 3000, t - 1000, step * 10 + k))  # fmt: skip
            t += dur + (1_000 if graph else 10_000)
        if graph:
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,1,?,3)",
                       (s0 - 3000, s0 - 1000, step * 10))  # fmt: skip
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?,?,59,NULL,4,1)", (s0 - 4000, t))
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,0,7,99,8,64)", (t, t + 1000))
    db.commit()
    db.close()


def test_nsys_export_reads_kernels_graphs_steps(tmp_path: Path) -> None:
    eager, graph = tmp_path / "eager.sqlite", tmp_path / "graph.sqlite"
    _nsys_db(eager, graph=False)
    _nsys_db(graph, graph=True)
    a, b = leg.load(eager), leg.load(graph)
    assert a.kernel_count == b.kernel_count == 8
    assert a.memop_count == 1
    assert (a.graph_kernel_count, b.graph_kernel_count) == (0, 8)
    assert a.gpu_time_us == pytest.approx(4 * 25 + 1)  # ns → µs
    assert a.step_count == 4 and all(s.kind == "decode-only" for s in a.steps)
    assert a.output_tokens == 32
    d = diff.diff(a, b)
    assert d.delta_us == pytest.approx(0)
    assert d.idle_delta_us == pytest.approx(-4 * 2 * 9)  # 9 µs less gap after each kernel
    assert b.launches == 4 and a.launches == 8


def test_without_step_names_phases_are_the_nvtx_ranges(tmp_path: Path) -> None:
    a_path, b_path = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    _nsys_db(a_path, graph=False, range_name="decode_block")
    _nsys_db(b_path, graph=True, range_name="decode_block")
    a, b = leg.load(a_path), leg.load(b_path)
    assert a.step_count == 0
    assert a.range_gpu["decode_block"] == (4, pytest.approx(100.0), 8)
    rows = {r.kind: r for r in diff.diff(a, b).phases}
    row = rows["range decode_block"]
    assert (row.a_steps, row.b_steps) == (4, 4)
    assert row.a_us_per_step == pytest.approx(25.0) and row.change == pytest.approx(0.0)


def test_not_sqlite(tmp_path: Path) -> None:
    p = tmp_path / "x.sqlite"
    p.write_text("no")
    with pytest.raises(VllmdiagError, match="SQLite"):
        nsys.read(p)


_P = 'process 10:"python serve.py";thread (0x7F01);main (serve.py:9)'
RAW_A = f"{_P};preprocess (mm.py:40);resize (img.py:7) 60\n{_P};step (engine.py:88) 40\n"
RAW_B = f"{_P};preprocess (mm.py:40);resize (img.py:7) 20\n{_P};step (engine.py:88) 80\n"


def test_pyspy_frames_whose_share_moved(tmp_path: Path) -> None:
    (tmp_path / "a.pyspy.txt").write_text(RAW_A)
    (tmp_path / "b.pyspy.txt").write_text(RAW_B)
    a, b = pyspy.read(tmp_path / "a.pyspy.txt"), pyspy.read(tmp_path / "b.pyspy.txt")
    assert a.samples == 100 and a.processes == 1
    assert a.inclusive["main (serve.py:9)"] == 100
    assert a.own["resize (img.py:7)"] == 60
    rows = pyspy.diff(a, b)
    moved = {r.frame: r.delta for r in rows}
    assert moved["step (engine.py:88)"] == pytest.approx(0.4)
    assert moved["resize (img.py:7)"] == pytest.approx(-0.4)
    assert "main (serve.py:9)" not in [r.frame for r in rows[:3]]


def test_cli_diff_of_two_pyspy_outputs(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from vllmdiag.cli.app import app

    (tmp_path / "old.pyspy.txt").write_text(RAW_A)
    (tmp_path / "new.pyspy.txt").write_text(RAW_B)
    res = CliRunner().invoke(
        app,
        [
            "profile",
            "diff",
            str(tmp_path / "old.pyspy.txt"),
            str(tmp_path / "new.pyspy.txt"),
            "--out",
            str(tmp_path / "d"),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["pyspy"]
    assert rows[0]["frame"] in ("step (engine.py:88)", "resize (img.py:7)")
    assert "old → new" in (tmp_path / "d" / "summary.md").read_text()


def test_pyspy_garbage_and_empty(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_text("no count here\n")
    with pytest.raises(VllmdiagError, match="does not end in a count"):
        pyspy.read(tmp_path / "bad.txt")
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(VllmdiagError, match="no samples"):
        pyspy.read(tmp_path / "empty.txt")


def test_html_picture_is_self_contained(tmp_path: Path) -> None:
    d = diff.diff(leg.load(H200 / "eager"), leg.load(H200 / "sdpa"))
    page = render.html_page(d, tmp_path / "diff.html").read_text()
    assert "<svg" in page and "attention" in page
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<script" not in page


# What ``vllm bench throughput --help=all`` prints (0.18 / 0.26 / 0.29: the flag's help is
# its docstring and the JSON tip; ProfilerConfig's fields are not listed), and an older
# vLLM's plain --help with the environment-variable spelling.
NEW_HELP = """  --profile             Use vLLM Profiling. --profiler-config must be provided on
                        the server.
  --profiler-config PROFILER_CONFIG
                        Profiling configuration.

                        API docs: https://docs.vllm.ai/en/v0.26.0/api/vllm/config/#vllm.co
                        nfig.ProfilerConfig

                        Should either be a valid JSON string or JSON keys passed individually.
"""
OLD_HELP = """  --profile             Use Torch Profiler. The env variable
                        VLLM_TORCH_PROFILER_DIR must be set.
  --profile-result-dir PROFILE_RESULT_DIR
"""
FIELDS_026 = ("profiler", "torch_profiler_dir", "torch_profiler_with_stack",
              "torch_profiler_use_gzip", "ignore_frontend", "delay_iterations",
              "max_iterations", "warmup_iterations", "active_iterations")  # fmt: skip


def test_vllm_profiler_switch_follows_help_and_config_fields(tmp_path: Path) -> None:
    argv, env, why = vllm_flags.profiler_switch(NEW_HELP, tmp_path, FIELDS_026)
    assert argv[0] == "--profiler-config" and argv[-1] == "--profile"
    cfg = json.loads(argv[1])
    assert cfg == {
        "profiler": "torch",
        "torch_profiler_dir": str(tmp_path),
        "torch_profiler_with_stack": False,
        "delay_iterations": vllm_flags.DELAY_ITERATIONS,
        "max_iterations": vllm_flags.MAX_ITERATIONS,
        "ignore_frontend": True,
    }
    assert set(cfg) <= set(FIELDS_026)  # never a key the leg's config would refuse
    assert not env and "delay_iterations=4" in why and "ProfilerConfig" in why
    # fields unknown (the leg's python could not say): only what the help names
    argv, _, why = vllm_flags.profiler_switch(NEW_HELP, tmp_path, None)
    assert set(json.loads(argv[1])) == {"profiler", "torch_profiler_dir"}
    assert "whole --profile run" in why
    argv, env, _ = vllm_flags.profiler_switch(OLD_HELP, tmp_path)
    assert argv == ["--profile"]  # --profile-result-dir is another flag
    assert env["VLLM_TORCH_PROFILER_DIR"] == str(tmp_path)


def test_no_profiler_flag_names_the_command_and_what_it_printed(tmp_path: Path) -> None:
    grouped = "usage: vllm bench throughput [options]\n\nConfig Groups:\n  ModelConfig ..."
    with pytest.raises(VllmdiagError) as err:
        vllm_flags.profiler_switch(grouped, tmp_path, asked="vllm bench throughput --help")
    text = err.value.render()
    assert "neither --profiler-config nor --profile is listed by vllm bench throughput" in text
    assert "it printed: usage: vllm bench throughput [options] Config Groups" in text
    assert "hint:" in text


def test_fields_probe_output() -> None:
    assert vllm_flags.fields_from('INFO loading\n["profiler", "max_iterations"]\n') == (
        "profiler",
        "max_iterations",
    )
    assert vllm_flags.fields_from("Traceback ...\nModuleNotFoundError: vllm") is None


def test_legs_whose_profilers_differ_are_warned(tmp_path: Path) -> None:
    from vllmdiag.jobs.profile.capture import Backend, CaptureResult
    from vllmdiag.jobs.profile.outcome import window_warnings

    _, _, new_why = vllm_flags.profiler_switch(NEW_HELP, tmp_path, FIELDS_026)
    _, _, old_why = vllm_flags.profiler_switch(OLD_HELP, tmp_path)

    def cap(leg_: str, why: str) -> CaptureResult:
        return CaptureResult(leg_, Backend.TORCH, True, tmp_path, (), None, 1.0, tmp_path, (why,))

    assert window_warnings([cap("a", new_why), cap("b", new_why)]) == ()
    (w,) = window_warnings([cap("a", new_why), cap("b", old_why)])
    assert "switched on differently" in w and "VLLM_TORCH_PROFILER_DIR" in w


def test_decode_regression_recipe_is_a_ready_profile_run(tmp_path: Path) -> None:
    from vllmdiag.jobs.profile.capture import _in_leg
    from vllmdiag.jobs.profile.sides import plan_sides
    from vllmdiag.plan import workloads
    from vllmdiag.services.config import load_recipe

    path = REPO / "recipes" / "decode_regression_235b.yaml"
    recipe = load_recipe(path)
    assert set(recipe.legs) == {"v0.18", "v0.26"}
    assert "vllm==0.18.0" in recipe.legs["v0.18"].requirements
    assert "vllm==0.26.0" in recipe.legs["v0.26"].requirements
    old, new = plan_sides(recipe, legs=["v0.18", "v0.26"])
    assert (old.cell.id, new.cell.id) == ("r1.v0.18.image", "r1.v0.26.image")
    # rendered per leg as the cell runner renders it: this cell's directory, the leg's
    # python, then the leg's own vllm and the profiler
    leg_bin = tmp_path / "bin"
    leg_bin.mkdir()
    (leg_bin / "vllm").write_text("")
    wl = recipe.workloads["image"]
    argv = workloads.render(wl, name="image", flags=new.flags, out_dir=tmp_path / "cap",
                            recipe_dir=recipe.recipe_dir, python=leg_bin / "python")  # fmt: skip
    assert argv[:3] == ["vllm", "bench", "throughput"]
    assert "random-mm" in argv and "--tensor-parallel-size" in argv
    assert argv[argv.index("--tensor-parallel-size") + 1] == "4"
    filled = _in_leg(leg_bin / "python", argv)
    assert filled[0] == str(leg_bin / "vllm")
    assert f"{tmp_path / 'cap'}/throughput.json" in filled
    extra, _, _ = vllm_flags.profiler_switch(NEW_HELP, tmp_path / "cap", FIELDS_026)
    assert "--profiler-config" in extra
