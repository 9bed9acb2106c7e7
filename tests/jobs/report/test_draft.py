"""Drafting reports from real run directories kept as fixtures: the CPU reproduction
(with secrets planted in its recipe's env) and its window, and vLLM 0.26.0 on an H200
(a start-up failure inside vLLM). Where the report goes, its title, its sections, what
they say, and that it reads back through the codec.

The CPU reproduction's paths were recorded under ``/nonexistent/recorded`` (a root no
machine has), so a draft here never reads a file of the machine that runs the tests: its
scripts come from the ``recipe/`` the run kept, as on any machine but the one that ran it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from vllmdiag import codec
from vllmdiag.jobs.report import (
    Report,
    ReportRequest,
    SectionId,
    TargetKind,
    Template,
    draft_report,
)

CPU = FIXTURES / "report" / "thrmma-cpu"
WINDOW = FIXTURES / "report" / "window-thrmma.json"
KV = FIXTURES / "vllm026" / "kv-starved"
SIGNATURE = "AttributeError: module 'cutlass.cute.core' has no attribute 'ThrMma'"


def _draft(*runs: Path, window: Path | None = None, profile: Path | None = None) -> Report:
    return draft_report(ReportRequest(tuple(runs), window, profile))


def _body(report: Report, sid: SectionId) -> str:
    section = report.section(sid)
    assert section is not None, [s.id for s in report.sections]
    return section.body


def test_the_cpu_reproduction_with_its_window_goes_to_vllm_as_a_metadata_defect() -> None:
    report = _draft(CPU, window=WINDOW)
    t = report.target
    assert (t.project, t.kind, t.template) == (
        "vllm",
        TargetKind.DEPENDENCY_METADATA,
        Template.VLLM_BUG,
    )
    assert "vllm==0.18.0 declares nvidia-cutlass-dsl>=4.4.0.dev1" in t.reason
    assert "the failing leg has nvidia-cutlass-dsl 4.8.1, one of them" in t.reason
    assert report.title == (
        "[Bug]: vllm 0.18.0 admits nvidia-cutlass-dsl 4.6.0 … 4.8.1: " + SIGNATURE
    )
    assert [s.id.value for s in report.sections] == [
        "summary", "environment", "reproduction", "root-cause", "evidence", "window",
        "duplicates",
    ]  # fmt: skip
    body = report.body
    order = [
        "### Your current environment",
        "### 🐛 Describe the bug",
        "#### Reproduction",
        "#### Root cause",
        "#### Single-variable evidence",
        "#### Dependency window",
        "#### Search terms for duplicates",
        "### Before submitting a new issue...",
    ]
    assert [body.index(h) for h in order] == sorted(body.index(h) for h in order)
    summary = _body(report, SectionId.SUMMARY)
    assert "Suggested fix: declare `nvidia-cutlass-dsl>=4.4.0.dev1,<4.6.0`." in summary
    assert "`pin nvidia-cutlass-dsl==4.5.3` is sufficient" in summary
    window = _body(report, SectionId.WINDOW)
    assert "| 4.2.0 … 4.5.3 (15) | present |" in window
    assert "| 4.6.0 … 4.8.1 (8) | absent |" in window
    assert "quack-kernels==0.6.5 requires >=4.7" in window
    evidence = _body(report, SectionId.EVIDENCE)
    assert "| **`nvidia-cutlass-dsl-4.5.3`** | **pin nvidia-cutlass-dsl==4.5.3** |" in evidence
    assert "`enforce-eager` is ruled out: flips none of the 2 failing workloads, failing " \
           "the same way." in evidence  # fmt: skip
    assert "nvidia-cutlass-dsl 4.8.1 → 4.5.3" in evidence  # what the pin moved with it
    root = _body(report, SectionId.ROOT_CAUSE)
    assert f"**Signature:** `{SIGNATURE}`" in root
    assert "process `EngineCore_DP0 pid=" in root and "in the workload's own code" in root
    assert root.count("File ") == 2  # the engine core's traceback, not the parent's wrapper


def test_the_cpu_reproduction_block_pins_the_failing_leg_and_writes_the_script() -> None:
    repro = _body(_draft(CPU, window=WINDOW), SectionId.REPRODUCTION)
    first, second = repro.split("```bash\n")[1:3]
    assert first.startswith("uv venv --python 3.11 .venv\ncat > requirements.txt <<'EOF'\n")
    assert "nvidia-cutlass-dsl==4.8.1\n" in first and "cat > engine_start.py <<'EOF'\n" in first
    assert "uv pip install --python .venv/bin/python -r requirements.txt\n" in first
    assert ".venv/bin/python engine_start.py --path utils\n```" in first
    assert "values withheld: set your own): PIP_EXTRA_INDEX_URL, WANDB_API_KEY" in first
    assert 'HF_HOME="$HOME"/.cache/huggingface' in first and "NODE_NAME='<host>'" in first
    assert second.startswith("uv pip install --python .venv/bin/python nvidia-cutlass-dsl==4.5.3")
    assert "cat >" not in second  # the script was written by the first block


def test_planted_secrets_home_paths_and_host_names_are_redacted_and_counted() -> None:
    report = _draft(CPU, window=WINDOW)
    text = json.dumps(codec.dump(report))
    for planted in ("planted-pass-42", "wandb-planted", "/home/alice", "NODE_NAME=vm"):
        assert planted not in text, planted
    assert report.redactions == {
        "secret": 1,  # WANDB_API_KEY, masked when the run was recorded
        "url-credential": 1,  # PIP_EXTRA_INDEX_URL's password
        "home-path": 3,  # HF_HOME, in the environment and in both commands
        "user-name": 0,
        "host-name": 3,  # NODE_NAME, the host the run.jsonl names
    }
    assert report.body.rstrip().splitlines()[-1] == (
        "Redacted before sharing: 1 secret, 1 credential in a URL, 3 home paths, "
        "0 user names, 3 host names."
    )


def test_without_a_window_the_pinned_dependency_is_the_target_with_a_plain_template() -> None:
    report = _draft(CPU)
    t = report.target
    assert (t.project, t.kind, t.template) == (
        "nvidia-cutlass-dsl",
        TargetKind.DEPENDENCY,
        Template.GENERIC,
    )
    assert "the one sufficient change is the pin nvidia-cutlass-dsl==4.5.3" in t.reason
    assert report.title == "nvidia-cutlass-dsl 4.8.1: " + SIGNATURE
    assert report.section(SectionId.WINDOW) is None
    assert report.body.startswith("## Summary\n")
    assert "### 🐛 Describe the bug" not in report.body and "- [ ]" not in report.body


def test_a_window_that_does_not_explain_the_failure_does_not_decide_the_target(
    tmp_path: Path,
) -> None:
    data = json.loads(WINDOW.read_text())
    data["symbol"] = "cutlass.cute.core.Unrelated"
    data["consumers"][0]["admitted_without_symbol"] = ["4.6.0"]
    window = tmp_path / "w.json"
    window.write_text(json.dumps(data))
    report = _draft(CPU, window=window)
    assert report.target.kind is TargetKind.DEPENDENCY
    assert "does not explain this failure" in report.target.reason
    assert report.section(SectionId.WINDOW) is not None  # still shown: it was measured


@pytest.mark.network
def test_a_path_legs_reproduction_installs_the_release_and_what_differs_from_it() -> None:
    """The H200's image holds 301 packages; the reproduction installs vLLM 0.26.0 and
    only the packages whose versions differ from what that release resolves to."""
    repro = _body(_draft(KV), SectionId.REPRODUCTION)
    block = repro.split("cat > requirements.txt <<'EOF'\n")[1].split("\nEOF\n")[0]
    lines = block.splitlines()
    assert lines[0] == "vllm==0.26.0"
    assert all("  # the failing machine has " in line for line in lines[1:]), lines
    assert "botorch" not in block and "jax" not in block  # the image's, not vLLM's
    assert len(lines) < 100
    assert "other packages are not vLLM's and are left out" in repro


def test_vllms_check_of_the_users_setting_is_no_bug_and_keeps_its_engine_traceback() -> None:
    report = _draft(KV)
    t = report.target
    assert (t.project, t.kind, t.template) == ("", TargetKind.NOT_A_BUG, Template.GENERIC)
    title = "Not an upstream bug (config): ValueError: No available memory for the cache blocks"
    assert report.title == title
    env = _body(report, SectionId.ENVIRONMENT)
    assert "GPU 0: NVIDIA H200 (143771 MiB)" in env and "580.159.04" in env
    assert "vLLM Version                 : 0.26.0" in env and "[uv] torch==2.11.0" in env
    root = _body(report, SectionId.ROOT_CAUSE)
    assert "/opt/torch" not in report.body  # the leg's venv is the reproduction's .venv
    assert '  File ".venv/lib/python3.12/site-packages/vllm/v1/core/kv_cache_utils.py"' in root
    assert "(Lines 34–56 of the cell's log, process prefixes removed.)" in root
    evidence = _body(report, SectionId.EVIDENCE)
    assert "| `attention-backend-env-triton` | env VLLM_ATTENTION_BACKEND=TRITON_ATTN | rc=1 " \
           "| inert |" in evidence  # fmt: skip
    assert "Its log shows it took effect: enforce_eager `False` → `True`." in evidence
    repro = _body(report, SectionId.REPRODUCTION)
    assert "uv venv --python 3.12 .venv" in repro and "\nvllm==0.26.0\n" in repro
    assert "`/tmp/models/llama` is a path on the machine that ran it" in repro
    assert "--max-model-len 1024 --gpu-memory-utilization 0.5\n```" in repro  # the fix passes


def test_the_report_reads_back_through_the_codec() -> None:
    for report in (_draft(CPU, window=WINDOW), _draft(KV)):
        assert codec.load(Report, codec.dump(report)) == report
        assert set(codec.dump(report)) == {"target", "title", "body", "sections", "redactions"}


def _copy(src: Path, dst: Path, gpu: str | None = None, passing: bool = False) -> Path:
    shutil.copytree(src, dst)
    if gpu is not None:
        for file in (dst / "envs").glob("*.json"):
            data = json.loads(file.read_text())
            data["gpu"]["gpus"][0]["name"] = gpu
            file.write_text(json.dumps(data))
    if passing:
        for file in dst.glob("cells/r1.baseline.*/result.json"):
            data = json.loads(file.read_text())
            data.update(outcome="pass", rc=0, root_cause=None, reason="exit status 0")
            data["run_fingerprint"]["attention_backend"] = "FLASH_ATTN"
            file.write_text(json.dumps(data))
    return dst


def test_blast_radius_from_two_machines_states_what_the_runs_show(tmp_path: Path) -> None:
    b200 = _copy(KV, tmp_path / "kv-b200", gpu="NVIDIA B200")
    data = json.loads((b200 / "cells/r1.baseline.llama/result.json").read_text())
    data["run_fingerprint"]["attention_backend"] = "FLASHINFER"
    (b200 / "cells/r1.baseline.llama/result.json").write_text(json.dumps(data))
    h200 = _copy(KV, tmp_path / "kv-h200", passing=True)
    blast = _body(_draft(b200, h200), SectionId.BLAST_RADIUS)
    assert "| 1: `kv-b200` | NVIDIA B200 | 580.159.04 | `v026` | `c4ae9cd05f3657c0` | fails (1 " \
           "of 1 cells) |" in blast  # fmt: skip
    assert "| 2: `kv-h200` | NVIDIA H200 | 580.159.04 | `v026` | `c4ae9cd05f3657c0` | passes " \
           "(1 of 1 cells) |" in blast  # fmt: skip
    assert (
        "In these 2 runs it fails only on NVIDIA B200, and passes on NVIDIA H200, with the same "
        "installed stack (lock `c4ae9cd05f3657c0`). No other GPU was measured." in blast
    )
    assert "attention_backend `FLASHINFER` → `FLASH_ATTN`" in blast

    both = _body(_draft(KV, b200), SectionId.BLAST_RADIUS)
    assert "It fails on every GPU these 2 runs measured: NVIDIA B200, NVIDIA H200." in both
    assert _draft(KV).section(SectionId.BLAST_RADIUS) is None  # one machine: no claim


def test_a_profile_run_is_shown_and_one_that_does_not_read_back_is_left_out(
    tmp_path: Path,
) -> None:
    profile = FIXTURES / "vllm026" / "profile"
    section = _body(_draft(KV, profile=profile), SectionId.PROFILE)
    assert "| `baseline` | torch | yes |" in section
    assert "| `enforce-eager` | torch | yes |" in section
    broken = tmp_path / "profile"
    broken.mkdir()
    (broken / "profile.json").write_text('{"schema": 99}')
    notes: list[str] = []
    report = draft_report(
        ReportRequest((KV,), profile=broken), lambda note: notes.append(note.text)
    )
    assert report.section(SectionId.PROFILE) is None
    assert len(notes) == 1 and "the profile run is left out" in notes[0]


def test_other_root_causes_in_the_runs_are_listed_apart(tmp_path: Path) -> None:
    run = shutil.copytree(CPU, tmp_path / "run")
    cell = run / "cells/r1.omp-num-threads-1.kernel-class/result.json"
    data = json.loads(cell.read_text())
    data["root_cause"]["signature"] = "RuntimeError: something else <n>"
    cell.write_text(json.dumps(data))
    report = _draft(run)
    assert "- `RuntimeError: something else <n>`: 1 cell" in _body(report, SectionId.OTHER_CAUSES)
    assert SIGNATURE in report.title


@pytest.mark.parametrize("outcome", ["error", "pass"])
def test_a_run_without_a_failing_cell_has_nothing_to_report(tmp_path: Path, outcome: str) -> None:
    from vllmdiag.errors import VllmdiagError

    run = shutil.copytree(CPU, tmp_path / "run")
    change = {"outcome": outcome, "rc": 0 if outcome == "pass" else None, "root_cause": None}
    for file in run.glob("cells/*/result.json"):
        data = json.loads(file.read_text())
        data.update(change)
        file.write_text(json.dumps(data))
    # the journal says the same (a result that disagrees with it is not trusted)
    events = [json.loads(line) for line in (run / "run.jsonl").read_text().splitlines()]
    for ev in events:
        if isinstance(ev.get("result"), dict):
            ev["result"].update(change)
    (run / "run.jsonl").write_text("".join(json.dumps(ev) + "\n" for ev in events))
    with pytest.raises(VllmdiagError, match="no cell failed in this run"):
        _draft(run)


def test_a_log_outside_the_run_or_not_a_file_is_not_read(tmp_path: Path) -> None:
    import os

    run = shutil.copytree(CPU, tmp_path / "run")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("\n".join(f"outside line {i}" for i in range(1, 30)))
    for file in run.glob("cells/r1.baseline.*/result.json"):
        data = json.loads(file.read_text())
        data["log"] = str(outside)
        file.write_text(json.dumps(data))
    root = _body(_draft(run), SectionId.ROOT_CAUSE)
    assert "outside line" not in root
    assert "Frames, innermost last:" in root and "engine_start.py:24 in wrapper_module" in root

    fifo = shutil.copytree(CPU, tmp_path / "fifo")
    for log in fifo.glob("cells/r1.baseline.*/log.txt"):
        log.unlink()
        os.mkfifo(log)
    assert "Frames, innermost last:" in _body(_draft(fifo), SectionId.ROOT_CAUSE)
