"""``vllmdiag profile RECIPE`` on a vLLM leg, end to end, with real subprocesses.

vLLM cannot run here (no GPU), so each leg is a real virtual environment whose ``vllm``
program stands in for it: it answers ``--help`` as vLLM's grouped help does (the flags
only under ``--help=all``), or as an older argparse that refuses ``--help=all``; it
checks the profiler switch it is given against the fields of its ``ProfilerConfig``
(the real 0.26 names), and "profiles" by writing a real H200 Kineto trace where vLLM
would (``<torch_profiler_dir>/rank0.<id>.pt.trace.json.gz``): the eager capture under
``--enforce-eager``, the compiled CUDA-graph one otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app
from vllmdiag.jobs.profile.results import load_run

TRACES = FIXTURES / "traces" / "h200-compile"
FIELDS_026 = ["profiler", "torch_profiler_dir", "torch_profiler_with_stack",
              "torch_profiler_with_flops", "torch_profiler_use_gzip",
              "torch_profiler_dump_cuda_time_total", "torch_profiler_record_shapes",
              "torch_profiler_with_memory", "capture_torch_profiler",
              "detailed_trace_annotation", "ignore_frontend", "delay_iterations",
              "max_iterations", "warmup_iterations", "active_iterations",
              "wait_iterations"]  # fmt: skip

STANDIN = """
import argparse, json, os, shutil, sys
MODE, TRACES, FIELDS = {mode!r}, {traces!r}, {fields!r}
args = sys.argv[1:]
if args[:2] != ["bench", "throughput"]:
    sys.exit("usage: vllm bench throughput [options]")
args = args[2:]
if "--help=all" in args and MODE == "old":
    sys.exit("usage: vllm bench throughput\\nvllm: error: argument -h/--help: ignored "
             "explicit argument 'all'")
if "--help" in args or "--help=all" in args:
    print("usage: vllm bench throughput [options]")
    if MODE == "none":
        print("  --model MODEL")
    elif MODE == "old":
        print("  --profile   Use Torch Profiler. VLLM_TORCH_PROFILER_DIR must be set.")
    elif "--help=all" in args:
        print("  --profile   Use vLLM Profiling. --profiler-config must be provided.")
        print("  --profiler-config PROFILER_CONFIG")
        print("      Should either be a valid JSON string or JSON keys passed individually.")
    else:
        print("Config Groups:\\n  ProfilerConfig  Dataclass which contains profiler config")
        print("Use --help=all to see all available parameters.")
    sys.exit(0)
p = argparse.ArgumentParser()
p.add_argument("--profile", action="store_true")
p.add_argument("--profiler-config")
p.add_argument("--enforce-eager", action="store_true")
ns, _ = p.parse_known_args(args)
if not ns.profile:
    sys.exit("--profile missing: nothing would be captured")
if MODE == "new":
    cfg = json.loads(ns.profiler_config)
    extra = set(cfg) - set(FIELDS)
    if extra:
        sys.exit(f"ProfilerConfig: extra fields not permitted: {{sorted(extra)}}")
    out = cfg["torch_profiler_dir"]
else:
    out = os.environ["VLLM_TORCH_PROFILER_DIR"]
side = "eager" if ns.enforce_eager else "compiled-graph"
os.makedirs(out, exist_ok=True)
shutil.copy(os.path.join(TRACES, side, "trace.json.gz"),
            os.path.join(out, "rank0.1234.pt.trace.json.gz"))
print("Throughput: 1.00 requests/s, 64.00 total tokens/s, 32.00 output tokens/s")
"""


def _leg(root: Path, mode: str) -> Path:
    """A venv with a ``vllm`` stand-in and a ``vllm.config.profiler`` of 0.26's fields."""
    venv = root / f"vllm-{mode}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], check=True, capture_output=True,
                               text=True).stdout.strip())  # fmt: skip
    pkg = site / "vllm" / "config"
    pkg.mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "profiler.py").write_text(
        "import dataclasses\n@dataclasses.dataclass\nclass ProfilerConfig:\n"
        + "".join(f"    {f}: object = None\n" for f in FIELDS_026)
    )
    prog = venv / "bin" / "vllm"
    prog.write_text(f"#!{py}\n" + STANDIN.format(mode=mode, traces=str(TRACES),
                                                   fields=FIELDS_026))  # fmt: skip
    prog.chmod(0o755)
    return venv


def _recipe(root: Path, venv: Path) -> Path:
    recipe = root / "standin.yaml"
    recipe.write_text(
        "name: standin\n"
        "question: where does enforce-eager move the time?\n"
        f"legs:\n  v026:\n    path: {venv}\n"
        "baseline:\n  leg: v026\n"
        "arms: [enforce-eager]\n"
        "workloads:\n  tput:\n    builtin: vllm-throughput\n    model: tiny-llama\n"
        "    input_len: 16\n    output_len: 32\n    num_prompts: 4\n"
    )
    return recipe


@pytest.fixture(scope="module")
def legs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("legs")
    return {m: _leg(root, m) for m in ("new", "old", "none")}


def test_baseline_vs_an_arm_on_one_leg(legs: dict[str, Path], tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, legs["new"])
    runs = tmp_path / "runs"
    args = ["profile", str(recipe), "--arms", "baseline", "enforce-eager"]
    res = CliRunner().invoke(app, [*args, "--runs-root", str(runs), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    (run_dir,) = runs.iterdir()  # a new run directory under --runs-root
    caps = data["run"]["captures"]
    assert [(c["leg"], c["ok"]) for c in caps] == [("baseline", True), ("enforce-eager", True)]
    note = caps[0]["notes"][0]
    assert "vllm bench throughput --help=all lists --profiler-config" in note
    assert "delay_iterations=4, max_iterations=32" in note
    cells = run_dir / "cells"
    argv = json.loads((cells / "r1.enforce-eager.tput.torch" / "out" / "argv.json").read_text())
    assert "--enforce-eager" in argv and argv[-1] == "--profile"
    assert "--enforce-eager" not in json.loads(
        (cells / "r1.baseline.tput.torch" / "out" / "argv.json").read_text()
    )
    # each side is a cell of the recipe: judged like a matrix cell
    assert [(c["id"], c["outcome"]) for c in data["cells"]] == [
        ("r1.baseline.tput.torch", "pass"), ("r1.enforce-eager.tput.torch", "pass")]  # fmt: skip
    d = data["diff"]
    base, eager = d["legs"]
    assert (base["name"], eager["name"]) == ("baseline", "enforce-eager")
    assert base["graph_kernels"] > 0 and eager["graph_kernels"] == 0
    assert base["wall_source"] == eager["wall_source"] == "traced CPU steps"
    assert d["explained"] == pytest.approx(1.0, abs=0.05)
    paired = {r["paired_by"]: r for r in d["top"] if r["paired_by"]}
    assert "fused_rms_norm" in paired and "mul_silu_split" in paired
    # the run reads back typed, and its journal says what each side was
    run = load_run(run_dir)
    assert run is not None and [c.leg for c in run.captures] == ["baseline", "enforce-eager"]
    events = [json.loads(x) for x in (run_dir / "run.jsonl").read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[:2] == ["run_started", "profile_started"] and kinds[-1] == "run_finished"
    assert events[0]["executor"] == "local" and events[0]["job"]["job"] == "profile"
    assert events[1]["sides"] == ["baseline: leg v026, baseline flags",
                                  "enforce-eager: leg v026, arm enforce-eager"]  # fmt: skip
    first = kinds.index("cell_started")
    assert kinds[first : first + 4] == [
        "cell_started", "capture_started", "cell_spawned", "capture_finished"]  # fmt: skip
    assert "hygiene_checked" in kinds and (run_dir / "manifest.json").exists()
    assert (run_dir / "diff" / "summary.md").exists() and (run_dir / "diff" / "diff.json").exists()
    # resumed, the finished captures are kept; other options would be another measurement
    again = CliRunner().invoke(app, [*args, "--resume", str(run_dir), "--json"])
    assert again.exit_code == 0, again.output
    kinds = [json.loads(x)["event"] for x in (run_dir / "run.jsonl").read_text().splitlines()]
    assert kinds.count("cell_reused") == 2 and kinds.count("capture_started") == 2
    assert json.loads(again.stdout)["diff"]["explained"] == pytest.approx(d["explained"])
    other = CliRunner().invoke(app, [*args, "--steps", "3", "--resume", str(run_dir)])
    assert other.exit_code == 1 and "started with other options" in other.output


def test_the_capture_window_comes_from_the_recipe_and_the_command_line(
    legs: dict[str, Path], tmp_path: Path
) -> None:
    """The recipe's ``profile:`` sets vLLM's delay/max iterations on both sides;
    ``--steps`` wins over it; the diff judges the window's step times."""
    recipe = _recipe(tmp_path, legs["new"])
    recipe.write_text(recipe.read_text() + "profile: {warmup: 2, steps: 48}\n")
    args = ["profile", str(recipe), "--arms", "baseline", "enforce-eager", "--json"]
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    for cap in data["run"]["captures"]:
        assert "delay_iterations=2, max_iterations=48" in cap["notes"][0]
        argv = json.loads((Path(cap["out"]) / "argv.json").read_text())
        cfg = json.loads(argv[argv.index("--profiler-config") + 1])
        assert (cfg["delay_iterations"], cfg["max_iterations"]) == (2, 48)
    assert data["diff"]["step_bands"]  # the step times of both sides, judged
    res = CliRunner().invoke(app, [*args, "--steps", "20", "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    notes = [c["notes"][0] for c in json.loads(res.stdout)["run"]["captures"]]
    assert all("delay_iterations=2, max_iterations=20" in n for n in notes)
    bad = CliRunner().invoke(app, ["matrix", "--dry-run", str(_window(tmp_path, "steps: 0"))])
    assert bad.exit_code == 1 and "profile.steps" in " ".join(bad.output.split())


def _window(root: Path, text: str) -> Path:
    path = root / "bad-window.yaml"
    path.write_text("name: w\nquestion: q\nlegs: {a: {path: /usr/bin/python3}}\n"
                    "baseline: {leg: a}\nworkloads: {t: {command: echo}}\n"
                    f"profile: {{{text}}}\n")  # fmt: skip
    return path


def test_an_older_cli_without_help_all_falls_back_to_help(
    legs: dict[str, Path], tmp_path: Path
) -> None:
    recipe = _recipe(tmp_path, legs["old"])
    res = CliRunner().invoke(app, ["profile", str(recipe), "--arms", "enforce-eager",
                                   "baseline", "--runs-root", str(tmp_path), "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    caps = json.loads(res.stdout)["run"]["captures"]
    assert [c["leg"] for c in caps] == ["enforce-eager", "baseline"]
    assert (
        "vllm bench throughput --help lists --profile but no --profiler-config"
        in (caps[0]["notes"][0])
    )


def test_a_cli_with_no_profiler_says_what_was_asked_and_what_it_printed(
    legs: dict[str, Path], tmp_path: Path
) -> None:
    recipe = _recipe(tmp_path, legs["none"])
    res = CliRunner().invoke(app, ["profile", str(recipe), "--arms", "baseline",
                                   "enforce-eager", "--runs-root", str(tmp_path)])  # fmt: skip
    assert res.exit_code == 1
    out = " ".join(res.output.split())
    assert "vllm bench throughput --help=all and vllm bench throughput --help" in out
    assert "neither --profiler-config nor --profile is listed by" in out
    assert "it printed: usage: vllm bench throughput [options] --model MODEL" in out
    assert "Traceback" not in res.output
