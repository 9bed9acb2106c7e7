"""Triage on log fixtures in vLLM's real formats (process tags, logger prefix, wrappers)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag import codec
from vllmdiag.cli.app import app
from vllmdiag.errors import ConfigError
from vllmdiag.readers.triage import Catalogue, attribute, triage_file

LOGS = FIXTURES / "logs"
THRMMA = LOGS / "b200_018_whisper_thrmma.log"


def test_engine_core_root_cause_beats_the_parent_wrapper() -> None:
    t = triage_file(THRMMA)
    rc = t.root_cause
    assert rc is not None
    assert rc.type == "AttributeError"
    assert rc.message == "module 'cutlass.cute.core' has no attribute 'ThrMma'"
    assert rc.process == "EngineCore_DP0 pid=41877"
    assert rc.known == "cutlass-thrmma-relocation"
    assert rc.next_step is not None and "--consumer vllm==0.18.0" in rc.next_step
    assert [w.message.split(".")[0] for w in t.wrappers] == ["Engine core initialization failed"]
    # logged by vLLM and printed again by multiprocessing: one traceback, not two
    assert t.tracebacks == 2
    assert t.vllm_version == "0.18.0"
    j = codec.dump(t)
    assert set(j["root_cause"]) >= {"type", "message", "process", "signature", "known", "next_step"}
    assert j["tracebacks"] == 2 and isinstance(j["wrappers"], list)


def test_benign_usage_stats_traceback_is_skipped_and_first_failing_worker_wins() -> None:
    t = triage_file(LOGS / "debug_usage_stats_then_oom.log")
    rc = t.root_cause
    assert rc is not None
    assert rc.type == "torch.OutOfMemoryError"
    assert rc.process == "Worker_TP1 pid=5302"
    assert rc.known == "cuda-out-of-memory"
    assert rc.next_step == "vllmdiag doctor LEG"
    assert "gpu-memory-utilization-0.8" in (rc.advice or "")
    assert rc.origin == "environment"
    assert [b.type for b in t.benign] == ["json.decoder.JSONDecodeError"]
    assert "usage-stats-cpuinfo-json" in t.benign[0].why
    kinds = sorted(w.message[:26] for w in t.wrappers)
    assert kinds == ["Engine core initialization", "Worker failed with error '"]


def test_chained_exception_names_the_known_link() -> None:
    t = triage_file(LOGS / "gemma4_018_chained.log")
    rc = t.root_cause
    assert rc is not None
    assert rc.type == "ValueError" and "model type `gemma4`" in rc.message
    assert rc.known == "transformers-unknown-model-type"
    assert "chain of 3" in rc.reason
    assert rc.meaning is not None and "gemma4" in rc.meaning
    assert rc.process == "main"  # docker timestamps stripped, no process tag
    # the frames under docker's timestamps keep their indentation: raised in transformers;
    # whose it is: the installed stack is older than the model (0.18 has no gemma4 at
    # all), which docs/blame.md counts as the environment's
    assert rc.raised_in == "transformers"
    assert (rc.origin, rc.package) == ("environment", None)
    assert "newer stack" in rc.why


def test_ray_remote_traceback_is_the_root() -> None:
    rc = triage_file(LOGS / "ray_free_memory.log").root_cause
    assert rc is not None
    assert rc.type == "ValueError"
    assert rc.process == "RayWorkerWrapper pid=7106"
    assert rc.known == "free-memory-below-utilization"
    assert rc.signature.startswith("ValueError: Free memory on device cuda:<n> (<n>/<n> GiB)")


def test_no_exception_and_no_death_line_says_unknown_not_a_guess() -> None:
    t = triage_file(LOGS / "silent_stop.log")
    assert t.root_cause is None
    assert t.tracebacks == 0
    assert t.note is not None and t.note.startswith("unknown: no exception and no death line")
    assert "killed by a signal?" not in t.note
    assert "it stops at: 'Encoder cache will be initialized with a budget of 16384" in t.note


def test_segfault_is_named_from_the_fatal_error_line() -> None:
    t = triage_file(LOGS / "segfault.log")
    rc = t.root_cause
    assert rc is not None
    assert (rc.type, rc.message) == ("", "Fatal Python error: Segmentation fault")
    assert rc.process == "EngineCore_DP0 pid=9911"
    assert rc.known == "native-crash"
    assert rc.evidence == "death-line"
    # the stack faulthandler printed under it: the crash is in torch's layer_norm
    assert (rc.origin, rc.package) == ("dependency", "torch")
    assert len(t.wrappers) == 1


def test_truncated_log() -> None:
    t = triage_file(LOGS / "truncated.log")
    assert t.root_cause is None
    assert t.truncated
    assert t.note is not None and "cut before its exception line" in t.note


def test_binary_garbage_around_a_real_failure(tmp_path: Path) -> None:
    rnd = random.Random(7)
    junk = bytes(rnd.randrange(256) for _ in range(300_000))
    log = tmp_path / "garbage.log"
    log.write_bytes(junk + b"\n" + THRMMA.read_bytes() + junk[:5000])
    t = triage_file(log)
    assert t.root_cause is not None
    assert t.root_cause.known == "cutlass-thrmma-relocation"


def test_interleaved_processes_first_failure_wins(tmp_path: Path) -> None:
    def tb(tag: str, exc: str) -> list[str]:
        return [
            f"({tag}) ERROR 09-22 10:00:00 [multiproc_executor.py:671] {x}"
            for x in (
                "Traceback (most recent call last):",
                '  File "/x/vllm/distributed/parallel_state.py", line 1200, in all_reduce',
                "    torch.distributed.all_reduce(t)",
                exc,
            )
        ]

    first = tb(
        "Worker_TP1 pid=12", "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    second = tb(
        "Worker_TP0 pid=11",
        "torch.distributed.DistBackendError: NCCL error in: "
        "ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version 2.27.3",
    )
    lines = [x for pair in zip(first, second, strict=True) for x in pair]
    log = tmp_path / "interleaved.log"
    log.write_text("\n".join(lines) + "\n")
    t = triage_file(log)
    assert t.tracebacks == 2
    assert t.root_cause is not None
    assert t.root_cause.process == "Worker_TP1 pid=12"
    assert "illegal memory access" in t.root_cause.message


def test_attribution_two_root_causes_not_three(tmp_path: Path) -> None:
    text = THRMMA.read_text()
    models = [
        "whisper-large-v3",
        "Qwen2-VL-7B",
        "Qwen3-VL-8B",
        "Qwen2.5-Omni-7B",
        "Kimi-Linear-48B",
        "Qwen3-VL-235B-FP8",
    ]
    for i, model in enumerate(models):
        d = tmp_path / "vllm-0.18.0" / model
        d.mkdir(parents=True)
        (d / "run.log").write_text(
            text.replace("openai/whisper-large-v3", model).replace("41877", str(50000 + i))
        )
    chained = (LOGS / "gemma4_018_chained.log").read_text()
    for model, mtype in (("gemma-4-26B", "gemma4"), ("GLM-5.2-NVFP4", "glm_moe_dsa")):
        d = tmp_path / "vllm-0.18.0" / model
        d.mkdir(parents=True)
        (d / "run.log").write_text(chained.replace("gemma4", mtype))
    att = attribute([tmp_path])
    assert [(g.known, len(g.members)) for g in att.groups] == [
        ("cutlass-thrmma-relocation", 6),
        ("transformers-unknown-model-type", 2),
    ]
    assert "vllm-0.18.0/gemma-4-26B/run.log" in att.groups[1].members
    # two signatures in group A (the model types differ), one in group B
    assert len(att.groups[1].signatures) == 2
    j = codec.dump(att)
    assert set(j["groups"][0]) >= {"signature", "known", "members", "next_step"}


def test_user_catalogue_is_tried_first(tmp_path: Path) -> None:
    extra = tmp_path / "mine.yaml"
    extra.write_text(
        "entries:\n"
        "  - name: our-cutlass\n"
        "    pattern: \"no attribute 'ThrMma'\"\n"
        "    meaning: ours\n"
        "    next_step: vllmdiag window nvidia-cutlass-dsl --consumer vllm=={vllm_version}\n"
    )
    rc = triage_file(THRMMA, Catalogue.load(extra)).root_cause
    assert rc is not None and rc.known == "our-cutlass"
    assert rc.next_step == "vllmdiag window nvidia-cutlass-dsl --consumer vllm==0.18.0"


def test_unknown_signatures_still_group(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"r{i}.log").write_text(
            "Traceback (most recent call last):\n"
            f'  File "/srv/run{i}/x.py", line {10 + i}, in f\n'
            f"MyError: widget {i * 7} failed at 0x7f{i}ab on /tmp/job{i}/out\n"
        )
    att = attribute([tmp_path], Catalogue.load(use_env=False))
    assert len(att.groups) == 1
    assert att.groups[0].known is None
    assert att.groups[0].signature == "MyError: widget <n> failed at <addr> on <path>"


def test_bad_catalogue_points_at_the_entry(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "entries:\n  - name: x\n    pattern: '(unclosed'\n    meaning: m\n    next_step: n\n"
    )
    with pytest.raises(ConfigError) as err:
        Catalogue.load(bad)
    assert "bad.yaml:2:" in str(err.value) and "regex" in str(err.value)


def test_catalogue_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = tmp_path / "env.yaml"
    extra.write_text(
        "entries:\n  - name: env-entry\n    pattern: ThrMma\n    meaning: m\n    next_step: n\n"
    )
    monkeypatch.setenv("VLLMDIAG_CATALOGUE", str(extra))
    rc = triage_file(THRMMA).root_cause
    assert rc is not None and rc.known == "env-entry"


def test_cli_json_single_and_directory(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["triage", str(THRMMA), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["root_cause"]["known"] == "cutlass-thrmma-relocation"
    assert data["tracebacks"] == 2
    res = runner.invoke(app, ["triage", str(LOGS), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    known = {g["known"] for g in data["groups"]}
    assert {"cutlass-thrmma-relocation", "cuda-out-of-memory"} <= known
    assert any(u["member"].endswith("silent_stop.log") for u in data["unattributed"])
    res = runner.invoke(app, ["triage", str(tmp_path / "missing.log")])
    assert res.exit_code == 1


def test_a_finished_run_is_not_called_killed(tmp_path: Path) -> None:
    log = tmp_path / "ok.log"
    log.write_text(
        "INFO 09-21 03:12:01 [__init__.py:216] Automatically detected platform cuda.\n"
        "Throughput: 7.53 requests/s, 22157.41 total tokens/s, 7004.12 output tokens/s\n"
    )
    t = triage_file(log)
    assert t.root_cause is None
    assert t.note is not None and t.note.startswith("no failure: the run finished")


def test_vllmdiag_run_directory_uses_each_cells_log(tmp_path: Path) -> None:
    for cell, src in (
        ("0.18.0__baseline__whisper", THRMMA),
        ("0.18.0__baseline__gemma", LOGS / "gemma4_018_chained.log"),
    ):
        d = tmp_path / "cells" / cell
        d.mkdir(parents=True)
        (d / "log.txt").write_bytes(src.read_bytes())
        (d / "log.previous.txt").write_text("Killed\n")
    (tmp_path / "summary.txt").write_text("Traceback (most recent call last):\nX: y\n")
    att = attribute([tmp_path])
    members = sorted(m for g in att.groups for m in g.members)
    assert members == ["0.18.0__baseline__gemma", "0.18.0__baseline__whisper"]
    assert att.unattributed == ()


def test_cli_refusal_is_the_root_cause(tmp_path: Path) -> None:
    from vllmdiag.model.arms import Arm
    from vllmdiag.model.inert import ArmEvidence, inert_reason

    log = tmp_path / "refused.log"
    log.write_text(
        "INFO 09-21 05:10:01 [__init__.py:216] Automatically detected platform cuda.\n"
        "usage: vllm bench throughput [-h] [--backend {vllm,hf,mii,vllm-chat}]\n"
        "vllm bench throughput: error: argument --moe-backend: invalid choice: "
        "'flashinfer_cutedsl' (choose from 'auto', 'triton', 'cutlass')\n"
    )
    rc = triage_file(log).root_cause
    assert rc is not None
    assert rc.type == "CLI error" and rc.known == "cli-rejects-flag"
    assert rc.process == "vllm bench throughput"
    text = log.read_text()
    moe = Arm(name="moe", flag="--moe-backend flashinfer_cutedsl")
    why = inert_reason(ArmEvidence(moe, log_texts=[text]))
    assert why is not None and "rejects --moe-backend" in why
    eager = Arm(name="eager", flag="--enforce-eager")
    assert inert_reason(ArmEvidence(eager, log_texts=[text])) is None


def test_tensor_parallel_ranks_first_rank_to_fail_wins() -> None:
    t = triage_file(LOGS / "tp_ranks_interleaved.log")
    rc = t.root_cause
    assert rc is not None
    assert rc.process == "VllmWorker rank=3 pid=36103"
    assert rc.known == "cuda-illegal-memory-access"
    assert rc.message.startswith("CUDA error: an illegal memory access was encountered")
    # torch's detail lines after the exception line belong to the message
    assert rc.message.endswith("For debugging consider passing CUDA_LAUNCH_BLOCKING=1")
    # three ranks + the engine's wrapper (logged and printed again: counted once)
    assert t.tracebacks == 4
    assert len(t.wrappers) == 1


def test_a_handled_error_is_not_the_root_cause(tmp_path: Path) -> None:
    log = tmp_path / "plugin.log"
    log.write_text(
        "ERROR 09-21 03:12:00 [__init__.py:50] Failed to load plugin omni\n"
        "ERROR 09-21 03:12:00 [__init__.py:50] Traceback (most recent call last):\n"
        'ERROR 09-21 03:12:00 [__init__.py:50]   File "/v/vllm/plugins/__init__.py", line 48\n'
        "ERROR 09-21 03:12:00 [__init__.py:50] ModuleNotFoundError: No module named 'omni'\n"
        + THRMMA.read_text()
    )
    rc = triage_file(log).root_cause
    assert rc is not None and rc.known == "cutlass-thrmma-relocation"


def test_a_cut_off_last_traceback_does_not_hide_an_earlier_complete_one(tmp_path: Path) -> None:
    cut = (LOGS / "truncated.log").read_text()  # a worker's traceback, cut in its frames
    log = tmp_path / "two.log"
    log.write_text(THRMMA.read_text() + cut)
    t = triage_file(log)
    assert t.truncated
    rc = t.root_cause
    assert rc is not None and rc.known == "cutlass-thrmma-relocation"
    assert rc.evidence == "traceback" and rc.process == "EngineCore_DP0 pid=41877"


def test_an_empty_wrapper_quote_names_nothing(tmp_path: Path) -> None:
    log = tmp_path / "empty.log"
    log.write_text(
        "(EngineCore_DP0 pid=1) ERROR 10-29 08:32:26 [core.py:708] RuntimeError: Worker "
        "failed with error '', please check the stack trace above for the root cause\n"
    )
    t = triage_file(log)
    assert t.root_cause is None
    assert t.note is not None and t.note.startswith("unknown: only wrappers are in view")


def test_json_keeps_its_keys_and_adds_evidence_and_origin() -> None:
    res = CliRunner().invoke(app, ["triage", str(LOGS / "h200_026_no_ctk_flavor.log"), "--json"])
    assert res.exit_code == 0, res.output
    rc = json.loads(res.stdout)["root_cause"]
    assert {"type", "message", "process", "signature", "known", "next_step"} <= set(rc)
    assert (rc["evidence"], rc["origin"], rc["package"]) == ("traceback", "environment", None)
    assert rc["raised_in"] == "cutlass" and "CUDA-toolkit extra" in rc["why"]
    assert rc["known"] == "cutlass-dsl-no-ctk-flavor"
    assert rc["next_step"] == "vllmdiag leg show RECIPE LEG --freeze"
