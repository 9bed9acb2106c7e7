"""A ``vllm bench`` command workload is read as vLLM reads it: a length flag its dataset
ignores is a warning at load, the run is shape-checked against what the command asked,
and a timed region too short to time is said. Judged on real vLLM 0.26 output captured
on an H200 (tests/fixtures/vllm026/shape), on the shipped recipes, and on real runs of
child processes that print what ``vllm bench throughput`` prints."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.paths import REPO
from vllmdiag import MatrixOptions, run_matrix
from vllmdiag.jobs.matrix import plan_matrix as plan
from vllmdiag.model.outcome import Outcome
from vllmdiag.model.recipe import WorkloadConfig
from vllmdiag.model.shape import ShapeAsked, WorkloadShape, shape_problem
from vllmdiag.plan import bench_command as bench
from vllmdiag.plan import workloads as wlmod
from vllmdiag.plan.bench_check import recipe_warnings
from vllmdiag.readers import workload_output as output
from vllmdiag.readers.fingerprint import parse_lines
from vllmdiag.services.config import load_recipe

H200 = REPO / "tests/fixtures/vllm026/shape/cells"
VLLMDIAG = [sys.executable, "-c", "from vllmdiag.cli.app import main; main()"]

#: The shipped 235B recipe's image command as it was: random-mm without a dataset path,
#: lengths in the plain spelling.
OLD_235B = (
    "vllm bench throughput --model Qwen/Qwen3-VL-235B-A22B-Instruct-FP8 --dataset-name "
    "random-mm --random-mm-base-items-per-request 1 --random-mm-limit-mm-per-prompt "
    '\'{"image": 1, "video": 0}\' --input-len 1024 --output-len 512 --num-prompts 1000 '
    "--seed 0 --output-json o/throughput.json --tensor-parallel-size 4"
)


def _cell(name: str) -> tuple[list[str], WorkloadShape, float]:
    """(argv, reported shape, elapsed_time) of a cell vLLM 0.26 ran on the H200."""
    cell = H200 / name
    argv = json.loads((cell / "result.json").read_text())["argv"]
    fp = parse_lines((cell / "log.txt").read_text().splitlines())
    assert fp.workload is not None
    out = json.loads((cell / "out/throughput.json").read_text())
    got = WorkloadShape(out["num_requests"], fp.workload.prompt_tokens,
                        fp.workload.output_tokens, fp.workload.stated_mismatch)  # fmt: skip
    return argv, got, out["elapsed_time"]


def test_the_h200_plain_spelling_run_is_caught_before_and_after_it_runs() -> None:
    """vLLM 0.26 ran `--dataset-name random --input-len 128 --output-len 32` as 1024 / 128
    tokens per prompt: the command alone says so, and its totals prove it."""
    argv, got, elapsed = _cell("r1.baseline.plain-spelling")
    cmd = bench.parse(argv)
    assert cmd is not None and cmd.kind == "throughput" and cmd.dataset == "random"
    assert (cmd.num_prompts, cmd.input_len, cmd.output_len) == (64, 1024, 128)
    said = " | ".join(cmd.problems)
    assert "--input-len 128 is ignored by --dataset-name random" in said
    assert "write --random-output-len 32 instead" in said
    # no shape declared: the command's own words are what was asked
    wl = WorkloadConfig(command=tuple(argv))
    asked = wlmod.asked_shape(wl, argv)
    assert asked == ShapeAsked(64, 128, 32)
    problem = shape_problem(asked, got) or ""
    assert "65,542 prompt tokens (1,024 per prompt) where 128 per prompt" in problem
    assert "8,192 output tokens (128 per prompt) where 32 per prompt" in problem
    # the timed region was under a second: said, with how to lengthen it
    warning = wlmod.short_region(elapsed) or ""
    assert warning.startswith("the timed region lasted 0.7 s (under 10 s)")
    assert "--num-prompts" in warning and "--random-output-len" in warning


def test_the_h200_builtin_run_takes_its_shape() -> None:
    argv, got, elapsed = _cell("r1.baseline.builtin")
    cmd = bench.parse(argv)
    assert cmd is not None and cmd.problems == ()
    assert shape_problem(wlmod.asked_shape(WorkloadConfig(command=tuple(argv)), argv)
                         or ShapeAsked(), got) is None  # fmt: skip
    assert (cmd.num_prompts, cmd.input_len, cmd.output_len) == (64, 128, 32)
    assert wlmod.short_region(elapsed) is not None  # 0.2 s
    assert wlmod.short_region(30.0) is None


def test_the_old_235b_command_is_caught_and_the_shipped_recipe_runs_what_it_promises() -> None:
    old = bench.parse(shlex.split(OLD_235B))
    assert old is not None
    assert old.dataset_asked == "random-mm" and old.dataset == "random"  # no images sent
    assert old.output_len == 128 and old.asked_output == 512
    said = " | ".join(old.problems)
    assert "replaces it by the text-only random dataset and sends no images" in said
    assert "--output-len 512 is ignored" in said
    recipe = load_recipe(REPO / "recipes/decode_regression_235b.yaml")
    assert recipe_warnings(recipe) == ()
    cell = plan(recipe).cells[0]
    new = bench.parse(cell.argv)
    assert new is not None and new.problems == ()
    assert (new.dataset, new.num_prompts, new.output_len) == ("random-mm", 1000, 512)
    asked = wlmod.asked_shape(recipe.workloads["image"], cell.argv)
    # images and the chat template count as prompt tokens: only prompts and output checked
    assert asked == ShapeAsked(1000, None, 512)
    assert shape_problem(asked, WorkloadShape(1000, 2_345_678, 512_000)) is None
    assert shape_problem(asked, WorkloadShape(1000, 2_345_678, 128_000)) is not None


def test_spellings_forms_and_the_other_benchmarks() -> None:
    # python -m form, --name=value, underscores, the last one given wins
    argv = [
        "/env/bin/python", "-m", "vllm.entrypoints.cli.main", "bench", "throughput",
        "--dataset-name=random", "--random_output_len", "64", "--random-output-len=96",
        "--num-prompts", "8", "--enforce-eager",
    ]  # fmt: skip
    cmd = bench.parse(argv)
    assert cmd is not None and (cmd.num_prompts, cmd.input_len, cmd.output_len) == (8, 1024, 96)
    # both spellings: the random one wins, the plain one is named as ignored
    both = bench.parse(shlex.split("vllm bench throughput --dataset-name random "
                                   "--input-len 10 --random-input-len 20"))  # fmt: skip
    assert both is not None and both.input_len == 20
    assert "--input-len 10 is ignored: --random-input-len 20 wins" in both.problems[0]
    # an old vLLM without --random-input-len reads the plain flags
    old = bench.parse(shlex.split("vllm bench throughput --input-len 10"), bench.PLAIN_LENGTHS)
    assert old is not None and old.input_len == 10 and old.problems == ()
    # serve: --input-len overwrites --random-input-len (the other way round)
    serve = bench.parse(shlex.split("vllm bench serve --random-input-len 50 --input-len 70"))
    assert serve is not None and serve.dataset == "random" and serve.input_len == 70
    assert "--random-input-len 50 is ignored" in serve.problems[0]
    path = bench.parse(shlex.split("vllm bench serve --dataset-name random-mm --dataset-path x"))
    assert path is not None and "drop --dataset-path" in path.problems[0]
    # latency has no dataset; its defaults
    lat = bench.parse(shlex.split("vllm bench latency --random-output-len 9"))
    assert lat is not None and (lat.batch_size, lat.input_len, lat.output_len) == (8, 32, 128)
    assert "not a flag of vllm bench latency" in lat.problems[0]
    # a dataset with a file ignores the random lengths
    share = bench.parse(shlex.split("vllm bench throughput --dataset-name sharegpt "
                                    "--dataset-path s.json --random-output-len 5"))  # fmt: skip
    assert share is not None and share.output_len is None
    assert "--random-output-len is ignored by --dataset-name sharegpt" in share.problems[0]
    # random-mm: prompts are chat messages only vllm-chat takes before 0.29
    mm = bench.parse(shlex.split("vllm bench throughput --dataset-name random-mm "
                                 "--dataset-path x --random-output-len 5"))  # fmt: skip
    assert mm is not None and "give --backend vllm-chat" in mm.problems[0]
    assert bench.range_ratio('{"input": 0.3, "output": 0.5}') == (0.3, 0.5)
    assert bench.range_ratio("wide?") == (1.0, 1.0)
    assert bench.parse(["python", "bench.py", "bench", "throughput"]) is None


def _recipe(tmp_path: Path, command: str, extra: str = "") -> Path:
    """A recipe whose command is ``python -m vllm.entrypoints.cli.main bench throughput``
    resolved to a stand-in that prints what vLLM 0.26 prints for the lengths it runs
    (the random dataset's --random-* lengths, defaults 1024 / 128)."""
    site = tmp_path / "site"
    cli = site / "vllm" / "entrypoints" / "cli"
    cli.mkdir(parents=True)
    for d in (site / "vllm", site / "vllm" / "entrypoints", cli):
        (d / "__init__.py").write_text("")
    (cli / "main.py").write_text(
        textwrap.dedent("""\
        import argparse, json
        p = argparse.ArgumentParser()
        p.add_argument("bench"); p.add_argument("kind")
        p.add_argument("--dataset-name"); p.add_argument("--output-json")
        p.add_argument("--input-len", type=int); p.add_argument("--output-len", type=int)
        p.add_argument("--random-input-len", type=int, default=1024)
        p.add_argument("--random-output-len", type=int, default=128)
        p.add_argument("--num-prompts", type=int, default=1000)
        p.add_argument("--elapsed", type=float, default=2.0)
        a = p.parse_args()
        n, i, o = a.num_prompts, a.random_input_len, a.random_output_len
        print(f"Throughput: 8.00 requests/s, 9000.00 total tokens/s, 1000.00 output tokens/s")
        print(f"Total num prompt tokens:  {n * i}")
        print(f"Total num output tokens:  {n * o}")
        json.dump({"elapsed_time": a.elapsed, "num_requests": n, "total_num_tokens": n * (i + o),
                   "requests_per_second": 8.0, "tokens_per_second": 9000.0},
                  open(a.output_json, "w"))
        """)
    )
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: bench-shape
        question: does each vllm bench command run what it asks?
        legs:
          here:
            path: {sys.executable}
        baseline:
          leg: here
          env: {{PYTHONPATH: "{site}"}}
        metrics:
          - {{name: tokens_per_second, json: throughput.json, key: tokens_per_second}}
        workloads:
          run:
            command: >-
              {{python}} -m vllm.entrypoints.cli.main bench throughput {command}
              --output-json {{out_dir}}/throughput.json {{flags}}
        """)
        + extra
    )
    return path


def test_an_ignored_length_flag_is_warned_in_the_dry_run_and_the_run_is_an_error(
    tmp_path: Path,
) -> None:
    path = _recipe(tmp_path, "--dataset-name random --num-prompts 16 --output-len 32")
    dry = subprocess.run([*VLLMDIAG, "matrix", str(path), "--dry-run"], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "warning: workloads.run.command: --output-len 32 is ignored by --dataset-name " \
        "random" in " ".join(dry.stdout.split())  # fmt: skip
    as_json = subprocess.run([*VLLMDIAG, "matrix", str(path), "--dry-run", "--json"],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert "write --random-output-len 32 instead" in json.loads(as_json.stdout)["warnings"][0]
    report = run_matrix(load_recipe(path), MatrixOptions(out=tmp_path / "run"))
    cell = report.cells[0]
    assert cell.outcome is Outcome.ERROR
    assert "2,048 output tokens (128 per prompt) where 32 per prompt" in cell.reason
    assert report.verdict.baseline["run"].label == "error"  # nothing a verdict can use


def test_a_command_that_asks_right_passes_and_a_short_timed_region_is_said(
    tmp_path: Path,
) -> None:
    path = _recipe(tmp_path, "--dataset-name random --num-prompts 16 --random-output-len 32")
    assert recipe_warnings(load_recipe(path)) == ()
    report = run_matrix(load_recipe(path), MatrixOptions(out=tmp_path / "run"))
    cell = report.cells[0]
    assert cell.outcome is Outcome.PASS, cell.reason
    assert cell.fingerprint is not None
    assert cell.fingerprint.workload == WorkloadShape(16, 16 * 1024, 16 * 32)
    assert len(cell.warnings) == 1 and "lasted 2.0 s (under 10 s)" in cell.warnings[0]
    saved = json.loads((tmp_path / "run/cells" / cell.id / "result.json").read_text())
    assert saved["warnings"] == list(cell.warnings)
    summary = (tmp_path / "run/summary.md").read_text()
    assert "## Warnings" in summary and f"`{cell.id}`: the timed region lasted 2.0 s" in summary
    # a long enough region: no warning
    (tmp_path / "long").mkdir()
    long_path = _recipe(tmp_path / "long", "--num-prompts 16 --random-output-len 32 "
                        "--elapsed 12.5")  # fmt: skip
    long = run_matrix(load_recipe(long_path), MatrixOptions(out=tmp_path / "long-run"))
    assert long.cells[0].outcome is Outcome.PASS and long.cells[0].warnings == ()


def test_a_serve_run_is_read_from_its_result_block(tmp_path: Path) -> None:
    """``vllm bench serve`` prints its totals as ``"{:<40} {:<10}"`` rows (0.18-0.29):
    the shape and the timed region come from them."""
    log = tmp_path / "log.txt"
    rows = [("Successful requests:", 200), ("Benchmark duration (s):", "3.21"),
            ("Total input tokens:", 200 * 256), ("Total generated tokens:", 200 * 128)]  # fmt: skip
    log.write_text("============ Serving Benchmark Result ============\n"
                   + "".join(f"{k:<40} {v:<10}\n" for k, v in rows))  # fmt: skip
    argv = shlex.split("vllm bench serve --model m --random-input-len 256 --output-len 64 "
                       "--num-prompts 200")  # fmt: skip
    wl = WorkloadConfig(command=tuple(argv))
    got = output.serve_shape(log)
    assert got == WorkloadShape(200, 200 * 256, 200 * 128)
    asked = wlmod.asked_shape(wl, argv)
    assert asked == ShapeAsked(200, 256, 64)
    assert "25,600 output tokens (128 per prompt) where 64 per prompt" in (
        shape_problem(asked, got) or ""
    )
    assert output.timed_region(wl, argv, tmp_path, log) == 3.21
    assert wlmod.bench_json(wl, argv, tmp_path) is None  # serve writes no throughput JSON


def test_a_study_warns_at_load_and_in_its_dry_run(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from vllmdiag.cli.app import app
    from vllmdiag.jobs.study import load_study
    from vllmdiag.jobs.study.study_plan import bench_warnings

    path = tmp_path / "study.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: s
        legs:
          "0.26": {{path: {sys.executable}}}
        models:
          alpha: {{model: org/alpha, tp: 1}}
        workloads:
          mm:
            command: >-
              vllm bench throughput --model {{model}} --dataset-name random-mm
              --output-len 512 --output-json {{out_dir}}/t.json {{flags}}
            metrics: [tput]
        metrics:
          tput: {{json: t.json, key: tokens_per_second}}
        """))  # fmt: skip
    found = bench_warnings(load_study(path))
    assert len(found) == 2 and all(w.endswith("(model alpha)") for w in found)
    assert "sends no images" in found[0] and "--output-len 512 is ignored" in found[1]
    res = CliRunner().invoke(app, ["study", str(path), "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["warnings"] == list(found)
