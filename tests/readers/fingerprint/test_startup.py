"""The engine start-up timeline: phases from the log's own timestamps, which phase moved
between two runs, and the hygiene finding that explains a phase that dominates."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from vllmdiag.cli.app import app
from vllmdiag.readers.fingerprint import fingerprint_file
from vllmdiag.readers.fingerprint.startup import diff, dominant, timeline

E = "(EngineCore pid=4242) "


def _log(warmup_end: str, header: bool = True) -> list[str]:
    """A vLLM 0.26 start-up, its lines as vLLM's source words them; ``warmup_end`` is
    when the sampler warm-up (FlashInfer's JIT build on a fresh host) ended."""
    lines = ["# vllmdiag: cell started 2026-12-01T10:00:00.412 local time"] if header else []
    lines += [
        "$ vllm bench throughput --model /tmp/m/llama",
        "INFO 12-01 10:00:25 [utils.py:233] non-default args: {'model': '/tmp/m/llama'}",
        E + "INFO 12-01 10:00:50 [core.py:117] Initializing a V1 LLM engine (v0.26.0) "
        "with config: model='/tmp/m/llama', enforce_eager=False",
        E + "INFO 12-01 10:00:55 [gpu_model_runner.py:5251] Starting to load model /tmp/m/llama...",
        E + "INFO 12-01 10:00:58 [gpu_model_runner.py:5348] Model loading took 0.05 GiB "
        "memory and 2.512345 seconds",
        E + "INFO 12-01 10:01:05 [backends.py:1156] Dynamo bytecode transform time: 4.10 s",
        E + "INFO 12-01 10:01:10 [monitor.py:20] torch.compile took 11.76 s in total",
        E + "INFO 12-01 10:01:12 [gpu_worker.py:561] Available KV cache memory: 120.5 GiB",
        E + "INFO 12-01 10:01:12 [kv_cache_utils.py:2177] GPU KV cache size: 3,500,000 tokens",
        E + "INFO 12-01 10:01:20 [gpu_model_runner.py:6845] Graph capturing finished in 8 "
        "secs, took 0.30 GiB",
        E + "INFO 12-01 10:01:20 [gpu_worker.py:836] Free memory on device (139.1/139.8 GiB) "
        "on startup. Desired GPU memory utilization is (0.9, 125.8 GiB).",
        E + f"INFO 12-01 {warmup_end} [monitor.py:90] Kernel JIT monitor activated",
        E + f"INFO 12-01 {warmup_end} [core.py:331] init engine (profile, create kv cache, "
        "warmup model) took 121.12 s (compilation: 11.76 s)",
    ]
    return lines


def test_phases_come_from_the_timestamps_and_name_vllms_steps() -> None:
    t = timeline(_log("10:02:50"))
    assert t is not None and t.ready and t.from_process_start
    by = {p.name: p.seconds for p in t.phases}
    assert by["imports (before vLLM's first log line)"] == 25
    assert by["weights"] == 3
    assert by["torch.compile"] == 12
    assert by["CUDA graphs"] == 8
    assert by["sampler warm-up (kernel JIT builds)"] == 90
    assert t.total_s == 170
    assert t.reported_init_s == 121.12
    assert sum(p.seconds for p in t.phases) == t.total_s


def test_a_dominant_phase_is_named_with_the_finding_that_explains_it() -> None:
    t = timeline(_log("10:02:50"))
    assert t is not None
    findings = [("flashinfer-cubin", "flashinfer-cubin is not installed next to flashinfer")]
    top = dominant(t, findings)
    assert top is not None and top.phase.name == "sampler warm-up (kernel JIT builds)"
    assert top.share > 0.5 and top.explanation == findings[0][1]
    quick = timeline(_log("10:01:21"))
    assert quick is not None and dominant(quick, findings) is None


def test_the_diff_says_which_phase_moved() -> None:
    slow, fast = timeline(_log("10:02:50")), timeline(_log("10:01:21"))
    assert slow is not None and fast is not None
    moves = diff(fast, slow)
    assert moves[0].name == "sampler warm-up (kernel JIT builds)" and moves[0].delta_s == 89


def test_a_log_without_the_header_starts_at_its_first_line_and_crosses_new_year() -> None:
    lines = [
        "INFO 12-31 23:59:50 [utils.py:233] non-default args: {}",
        E + "INFO 01-01 00:00:10 [gpu_model_runner.py:5251] Starting to load model m...",
    ]
    t = timeline(lines)
    assert t is not None and not t.from_process_start and not t.ready
    assert t.total_s == 20


def test_cli_shows_the_timeline_and_the_move(tmp_path: Path) -> None:
    slow, fast = tmp_path / "slow.log", tmp_path / "fast.log"
    slow.write_text("\n".join(_log("10:02:50")) + "\n")
    fast.write_text("\n".join(_log("10:01:21")) + "\n")
    assert fingerprint_file(slow).startup is not None
    one = CliRunner().invoke(app, ["fingerprint", str(slow), "--json"])
    assert one.exit_code == 0, one.output
    data = json.loads(one.stdout)
    assert data["startup_dominant"]["phase"]["name"] == "sampler warm-up (kernel JIT builds)"
    assert data["startup"]["total_s"] == 170
    both = CliRunner().invoke(app, ["fingerprint", "diff", str(fast), str(slow), "--json"])
    assert both.exit_code == 0, both.output
    moved = json.loads(both.stdout)["startup"]["phases"][0]
    assert moved == {
        "name": "sampler warm-up (kernel JIT builds)",
        "a_s": 1.0,
        "b_s": 90.0,
        "delta_s": 89.0,
    }
    text = CliRunner().invoke(app, ["fingerprint", "diff", str(fast), str(slow)])
    assert "sampler warm-up (kernel JIT builds) moved most (+89 s)" in text.stdout
