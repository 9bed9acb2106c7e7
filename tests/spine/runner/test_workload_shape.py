"""The workload takes the shape the recipe asked, or the cell is an ERROR; the built-in
spells its lengths as the leg's own vLLM does. Real runs of real child processes that
print what ``vllm bench throughput`` prints (its lines, its JSON keys)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.recipes import write_recipe
from vllmdiag import MatrixOptions, codec, run_matrix
from vllmdiag.model.outcome import Outcome
from vllmdiag.model.recipe import Builtin, WorkloadConfig
from vllmdiag.model.shape import ShapeAsked, WorkloadShape, shape_problem
from vllmdiag.plan import workloads as wlmod
from vllmdiag.readers.fingerprint import parse_lines
from vllmdiag.services.config import load_recipe
from vllmdiag.spine.runner.vllm_cli import bench_dialect, vllm_package_dir

BENCH = """
import json, sys
out, n, per_in, per_out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
extra = int(sys.argv[5]) if len(sys.argv) > 5 else 0
if extra:
    print(f"WARNING 12-01 10:00:00 [datasets.py:682] Across all generated prompts, there "
          f"were {extra} more tokens than expected after decoding and re-encoding.")
print("Throughput: 12.50 requests/s, 14400.00 total tokens/s, 1600.00 output tokens/s")
print(f"Total num prompt tokens:  {n * per_in + extra}")
print(f"Total num output tokens:  {n * per_out}")
json.dump({"elapsed_time": 2.0, "num_requests": n, "total_num_tokens": n * (per_in + per_out),
           "requests_per_second": 12.5, "tokens_per_second": 14400.0},
          open(out + "/throughput.json", "w"))
"""


def _recipe(tmp_path: Path, workloads: str) -> Path:
    head = """\
    baseline: {leg: here}
    metrics:
      - {name: tokens_per_second, json: throughput.json, key: tokens_per_second}
    workloads:
    """
    body = textwrap.dedent(head) + textwrap.indent(textwrap.dedent(workloads), "  ")
    return write_recipe(
        tmp_path,
        body,
        name="shape",
        question="did each cell run the workload asked?",
        scripts={"bench.py": BENCH},
    )


def test_a_workload_of_another_shape_is_an_error_and_the_asked_shape_passes(
    tmp_path: Path,
) -> None:
    # "asked" declares 64-token prompts and gets them (20 tokens over, as the dataset
    # itself states); "wrong" declares 128 and gets vLLM's 1024 default: the 0.26 case.
    path = _recipe(
        tmp_path,
        """\
        asked:
          command: "{python} {recipe_dir}/bench.py {out_dir} 256 64 32 20"
          num_prompts: 256
          input_len: 64
          output_len: 32
        wrong:
          command: "{python} {recipe_dir}/bench.py {out_dir} 256 1024 128"
          num_prompts: 256
          input_len: 128
          output_len: 128
        free:
          command: "{python} {recipe_dir}/bench.py {out_dir} 256 1024 128"
        """,
    )
    report = run_matrix(load_recipe(path), MatrixOptions(out=tmp_path / "run"))
    by = {r.workload: r for r in report.cells}
    assert by["asked"].outcome is Outcome.PASS, by["asked"].reason
    assert by["asked"].fingerprint is not None
    assert by["asked"].fingerprint.workload == WorkloadShape(256, 256 * 64 + 20, 256 * 32, 20)
    wrong = by["wrong"]
    assert wrong.outcome is Outcome.ERROR
    assert wrong.reason.startswith("the workload did not take the shape the recipe asked")
    assert "262,144 prompt tokens (1,024 per prompt) where 128 per prompt" in wrong.reason
    assert "output" not in wrong.reason  # 128 output tokens were asked and run
    assert by["free"].outcome is Outcome.PASS  # nothing declared, nothing checked


def test_shape_bounds_follow_the_range_ratio_and_the_stated_mismatch() -> None:
    asked = ShapeAsked(num_prompts=100, input_len=100, output_len=10, range_ratio=0.5)
    assert shape_problem(asked, WorkloadShape(100, 14_000, 1_000)) is None
    assert shape_problem(asked, WorkloadShape(100, 16_000, 1_000)) is not None
    exact = ShapeAsked(num_prompts=100, input_len=100, output_len=10)
    assert shape_problem(exact, WorkloadShape(100, 10_050, 1_000)) is None  # within slack
    assert shape_problem(exact, WorkloadShape(100, 13_000, 1_000, stated_mismatch=3_000)) is None
    assert shape_problem(exact, WorkloadShape(100, 13_000, 1_000)) is not None
    assert "90 prompts where 100" in (shape_problem(exact, WorkloadShape(90, 9_000, 900)) or "")
    assert shape_problem(exact, WorkloadShape()) is None  # nothing reported, nothing judged


def test_the_asked_shape_reads_the_range_ratio_from_the_command() -> None:
    wl = WorkloadConfig(builtin=Builtin.THROUGHPUT, model="m", input_len=64, output_len=8)
    argv = wlmod.render(
        wl,
        name="t",
        flags=(),
        out_dir=Path("o"),
        recipe_dir=Path("."),
        python=Path(sys.executable),
    )
    assert wlmod.asked_shape(wl, argv) == ShapeAsked(200, 64, 8, 0.0)
    assert wlmod.asked_shape(wl, [*argv, "--random-range-ratio", "0.25"]) == ShapeAsked(
        200, 64, 8, 0.25
    )
    assert wlmod.asked_shape(WorkloadConfig(builtin=Builtin.LATENCY, model="m"), argv) is None


def _fake_vllm(root: Path, with_random: bool) -> Path:
    bench = root / "vllm" / "benchmarks"
    bench.mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("raise RuntimeError('vllm must not be imported')\n")
    (bench / "__init__.py").write_text("")
    flags = '"--random-input-len"' if with_random else '"--input-len"'
    (bench / "datasets.py").write_text(f"parser.add_argument({flags}, type=int)\n")
    return root


def test_the_builtin_spells_lengths_as_the_legs_vllm_does(tmp_path: Path) -> None:
    new = _fake_vllm(tmp_path / "new", with_random=True)
    old = _fake_vllm(tmp_path / "old", with_random=False)
    py = Path(sys.executable)
    assert vllm_package_dir(py, str(new)) == new / "vllm"
    assert bench_dialect(py, str(new)) == wlmod.CURRENT
    assert bench_dialect(py, str(old)) == wlmod.PLAIN_LENGTHS
    wl = WorkloadConfig(builtin=Builtin.THROUGHPUT, model="m", input_len=64)
    assert "--random-input-len" in wlmod.template(wl, bench_dialect(py, str(new)))
    plain = wlmod.template(wl, bench_dialect(py, str(old)))
    assert plain[plain.index("--input-len") + 1] == "64"
    # a leg without vLLM at all (the CPU reproduction) keeps the current spelling
    assert bench_dialect(py, str(tmp_path / "nothing")) == wlmod.CURRENT
    probe = subprocess.run([sys.executable, "-c", "import vllm"], capture_output=True,
                           env={"PYTHONPATH": str(new)})  # fmt: skip
    assert probe.returncode != 0  # the dialect was read without importing vLLM


def test_the_fingerprint_reads_the_totals_a_benchmark_printed() -> None:
    fp = parse_lines(
        [
            "Throughput: 12.50 requests/s, 14400.00 total tokens/s, 1600.00 output tokens/s",
            "Total num prompt tokens:  262164",
            "Total num output tokens:  32768",
        ]
    )
    assert fp.workload == WorkloadShape(None, 262_164, 32_768)
    assert json.loads(codec.dumps(fp))["workload"]["prompt_tokens"] == 262_164


def test_a_failure_in_vllmdiags_own_probe_is_an_error_never_a_verdict(tmp_path: Path) -> None:
    """A vLLM whose engine arguments no longer round-trip through ``dataclasses.asdict``
    (the 0.26 case) crashed the smoke probe itself: that is vllmdiag's failure."""
    fake = tmp_path / "site"
    (fake / "vllm" / "utils").mkdir(parents=True)
    (fake / "vllm" / "engine").mkdir(parents=True)
    (fake / "vllm" / "__init__.py").write_text("class LLM: pass\nclass SamplingParams: pass\n")
    (fake / "vllm" / "utils" / "__init__.py").write_text("")
    (fake / "vllm" / "utils" / "argparse_utils.py").write_text(
        "from argparse import ArgumentParser as FlexibleArgumentParser\n"
    )
    (fake / "vllm" / "engine" / "__init__.py").write_text("")
    (fake / "vllm" / "engine" / "arg_utils.py").write_text(
        "class EngineArgs:\n"
        "    @staticmethod\n"
        "    def add_cli_args(p):\n"
        "        p.add_argument('--model')\n"
        "        return p\n"
        "    @classmethod\n"
        "    def from_cli_args(cls, args):\n"
        "        return cls()\n"
    )
    path = tmp_path / "recipe.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: probe-bug
        question: is a crash in the probe a verdict?
        legs:
          here:
            path: {sys.executable}
        baseline:
          leg: here
          env: {{PYTHONPATH: "{fake}"}}
        workloads:
          smoke: {{builtin: vllm-smoke, model: m}}
        """)
    )
    report = run_matrix(load_recipe(path), MatrixOptions(out=tmp_path / "run"))
    cell = report.cells[0]
    assert cell.outcome is Outcome.ERROR, cell
    assert cell.root_cause is not None and cell.root_cause.origin == "tool"
    assert cell.reason.startswith("vllmdiag's own code failed")
    assert "vllm_smoke.py" in cell.reason
    assert report.verdict.summary.startswith("The baseline has no result")
