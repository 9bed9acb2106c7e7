"""Whose fault, what to do next and whether a difference is real, judged on the CPU from
run directories the device suite wrote on an H200 (vLLM 0.26.0 and 0.25.0, tiny
random-weight models, 2026-12-02): ``tests/device/test_judgement_device.py``,
``test_hang_device.py`` and ``test_noise_device.py``. The readers were not built on
these runs; the judgements are decided again here from what the directories hold.

- ``user-setting``: a baseline asking ``--max-model-len 65536`` of a 4096-position model.
  The run was recorded by an earlier reader that called the probe's call the tool's own
  failure (an ERROR, so "nothing can be concluded"); read again it is the user's setting.
- ``kv-raise``: the KV cache starved at ``--gpu-memory-utilization 0.003``; the next step
  raises the share, and that arm makes the engine start.
- ``moe-hang``: ``--moe-backend flashinfer_cutlass`` on the tiny MoE, killed at its 150 s
  timeout; py-spy's dumps say where it was.
- ``study``: two releases with repeats, cut by the call's time limit after three of its
  four cells; two same-settings measurements of 0.25 disagree by 13.7 %.
- ``bisect-two-releases``: a metric bisection by commit between the two releases, run
  twice on a free GPU (``test_bisect_device.py``): it named the 0.26 commit, then refused.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app
from vllmdiag.jobs.bisect.endpoints import endpoint_gap
from vllmdiag.model.outcome import Outcome
from vllmdiag.spine.rundir import load_result

REAL = FIXTURES / "vllm026"


def _copy(name: str, tmp_path: Path) -> Path:
    copy = tmp_path / name
    shutil.copytree(REAL / name, copy)
    return copy


def _verdict(run: Path) -> dict[str, object]:
    result = CliRunner().invoke(app, ["matrix", "verdict", str(run), "--json"])
    assert result.exit_code == 0, result.output
    verdict: dict[str, object] = json.loads(result.stdout)
    return verdict


def _report(run: Path) -> dict[str, object]:
    result = CliRunner().invoke(app, ["report", str(run), "--json"])
    assert result.exit_code == 0, result.output
    draft: dict[str, object] = json.loads(result.stdout)
    return draft


def _recorded(run: Path, cell: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((run / "cells" / cell / "result.json").read_text())
    return data


def test_a_users_max_model_len_is_the_users_setting_not_vllmdiags(tmp_path: Path) -> None:
    run = _copy("user-setting", tmp_path)
    recorded = _recorded(run, "r1.baseline.llama")
    assert recorded["outcome"] == "error"  # what the earlier reading made of it
    verdict = _verdict(run)
    arms = {a["name"]: a["effect"] for a in verdict["arms"]}  # type: ignore[attr-defined]
    assert arms == {"max-model-len-2048": "sufficient"}
    assert verdict["baseline"]["llama"]["state"] == "fail"  # type: ignore[index]
    assert "whose fault: config" in (run / "summary.md").read_text()
    log = run / "cells" / "r1.baseline.llama" / "log.txt"
    triaged = CliRunner().invoke(app, ["triage", str(log), "--json"])
    root = json.loads(triaged.stdout)["root_cause"]
    assert root["origin"] == "config" and root["raised_in"] == "pydantic", root
    assert "max-model-len" in root["why"] and root["next_step"].endswith("max-model-len-2048")
    draft = _report(run)
    target = draft["target"]
    assert target["kind"] == "not-a-bug" and target["project"] == "", target  # type: ignore[index]
    body = str(draft["body"])
    assert "**Not an upstream bug: no issue to file.**" in body
    assert "`flag --max-model-len 2048` makes it pass" in body
    assert "`--max-model-len 65536`, came from the recipe's baseline flags" in body
    assert "pydantic" not in str(draft["title"])


def test_a_starved_kv_cache_names_the_step_that_raises_the_share(tmp_path: Path) -> None:
    run = _copy("kv-raise", tmp_path)
    base = _recorded(run, "r1.baseline.llama")
    root = base["root_cause"]
    assert isinstance(root, dict)
    assert root["message"].startswith("No available memory for the cache blocks")
    assert root["origin"] == "config" and root["known"] == "kv-cache-too-small"
    # the message says "increase": the step raises the share (the old one halved it)
    assert root["next_step"] == "vllmdiag arms show gpu-memory-utilization-0.95"
    shown = CliRunner().invoke(app, ["arms", "show", "gpu-memory-utilization-0.95", "--json"])
    assert shown.exit_code == 0 and "--gpu-memory-utilization 0.95" in shown.stdout
    verdict = _verdict(run)
    arms = {a["name"]: a["effect"] for a in verdict["arms"]}  # type: ignore[attr-defined]
    assert arms == {"gpu-memory-utilization-0.95": "sufficient"}
    draft = _report(run)
    assert draft["target"]["kind"] == "not-a-bug", draft["target"]  # type: ignore[index]
    assert "`--gpu-memory-utilization 0.003`" in str(draft["body"])


def test_a_hung_engine_says_where_it_was_when_it_was_killed() -> None:
    run = REAL / "moe-hang"
    result = load_result(_recorded(run, "r1.baseline.moe"))
    assert result.outcome is Outcome.TIMEOUT
    hang = result.hang
    assert hang is not None and hang.timeout_s == 150
    assert hang.after_phase == "torch.compile"
    assert hang.stuck is not None and "EngineCore" in hang.stuck.title
    # a JIT build of FlashInfer's kernels, not a deadlock: the frames say so
    assert [f.function for f in hang.stuck.frames[:2]] == ["run_ninja", "JitSpec.build"]
    for process in hang.processes:
        if process.note is None:
            dump = (run / "cells" / result.id / process.file).read_text()
            assert f"Process {process.pid}" in dump
    root = result.root_cause
    assert root is not None and root.type == "Timeout" and root.evidence == "hang-dump"
    assert root.message.startswith("killed at its 150 s timeout, after torch.compile")
    assert "stuck in VLLM::EngineCore" in root.message and "run_ninja" in root.message
    startup = result.fingerprint.startup if result.fingerprint else None
    assert startup is not None and startup.killed and not startup.ready
    assert startup.silent_s is not None and 40 < startup.silent_s < 60


def test_two_same_settings_measurements_that_disagree_are_shown_never_superseded(
    tmp_path: Path,
) -> None:
    study = _copy("study", tmp_path)
    result = CliRunner().invoke(app, ["study", "tables", str(study)])
    assert result.exit_code == 0, result.output
    values = sorted(
        load_result(json.loads(p.read_text())).metrics["throughput"]
        for p in study.glob("batches/*/cells/r*.0.25.llama.mixed/result.json")
    )
    assert len(values) == 2 and values[1] / values[0] - 1 > 0.05  # beyond the band
    report = (study / "REPORT.md").read_text()
    assert "unstable: its 2 measurements under the same settings disagree by 13.7%" in report
    for v in values:
        assert f"{v:,.1f}" in report  # every measurement is in the note
    tsv = (study / "tables" / "throughput.tsv").read_text().splitlines()
    row = dict(zip(tsv[1].split("\t"), tsv[2].split("\t"), strict=False))
    assert row["0.25"] == f"{sum(values) / 2:,.0f}"  # the median of the two
    assert row["± 0.25"] == "±6.8% n=2 unstable"
    assert row["0.26"] == "—" and row["26/25"] == "—"  # one of two repeats ran: none counts
    assert "0.26: no run counts; the latest: incomplete: 1 of 2 repeats" in row["notes"]
    assert "superseded" not in (study / "CANONICAL.md").read_text()


def test_a_bisect_end_on_a_gpu_another_engine_held_is_the_machines_fault() -> None:
    """``bisect-ends``: a metric bisection by commit between the two staged releases
    (``tests/device/test_bisect_device.py``), started while an engine that an interrupted
    device test had left held 128 GiB of the H200. The 0.25 end's first repeat measured
    (68,648 tokens/s); its second and both of the 0.26 end's found the memory taken. The
    bisection stopped at that end with the engine's own message, never naming a commit;
    each failed step is read as the machine's (another process holds the memory)."""
    ends = REAL / "bisect-ends"
    assert "tokens_per_s=68647.9" in (ends / "v0.25.0.run0.log").read_text()
    said = " ".join((ends / "output.txt").read_text().split())
    assert "gave no value of tokens_per_s" in said and "first_bad" not in said
    for log in ("v0.25.0.run1.log", "v0.26.0.run0.log", "v0.26.0.run1.log"):
        result = CliRunner().invoke(app, ["triage", str(ends / log), "--json"])
        assert result.exit_code == 0, result.output
        cause = json.loads(result.stdout)["root_cause"]
        assert cause["type"] == "ValueError" and cause["process"].startswith("EngineCore")
        assert cause["message"].startswith("Free memory on device cuda:0 (")
        assert cause["origin"] == "environment", (log, cause)


def _step_values(run: Path) -> dict[str, list[float]]:
    """Each step's tokens/s, as its repeats' own logs printed them."""
    (bisect,) = (run / "bisect").iterdir()
    values: dict[str, list[float]] = {}
    for log in sorted(bisect.glob("*/cells/run*/log.txt")):
        said = re.findall(r"^tokens_per_s=([0-9.]+)$", log.read_text(), re.M)
        version = re.findall(r"^vllm_version=(\S+)$", log.read_text(), re.M)
        assert len(said) == 1 and len(version) == 1, log
        values.setdefault(version[0], []).append(float(said[0]))
    return values


def test_two_bisections_between_the_releases_judge_real_noise_both_ways() -> None:
    """``bisect-two-releases``: the same metric bisection by commit between the two staged
    releases, run twice back to back on a free H200 (``test_bisect_device.py``, two
    repeats an end, four engine starts each). The first measured the ends 18 % apart
    beyond their spread and named the 0.26 commit; the second measured 0.25 faster than
    0.26 this time, by less than its own repeats' spread, and refused to start. The
    endpoint rule, applied again to the values the steps' own logs printed, decides both
    as the runs did."""
    named, refused = (
        REAL / "bisect-two-releases" / "named",
        REAL / "bisect-two-releases" / "refused",
    )
    for run, differs in ((named, True), (refused, False)):
        values = _step_values(run)
        assert sorted(values) == ["0.25.0", "0.26.0"] and all(len(v) == 2 for v in values.values())
        gap = endpoint_gap(values["0.25.0"], values["0.26.0"])
        assert gap.differs is differs, (run.name, gap.reason)
        said = " ".join((run / "bisect-two-releases.txt").read_text().split())
        assert gap.reason in said
    said = (named / "bisect-two-releases.txt").read_text()
    data = json.loads(said[said.index("{") :])
    assert data["first_bad"]["subject"].startswith("vLLM 0.26.0") and data["first_bad"]["pr"] == 26
    assert data["last_good"]["subject"].startswith("vLLM 0.25.0") and data["exact"]
    assert data["derived"] and data["threshold"] == round(
        endpoint_gap(_step_values(named)["0.25.0"], _step_values(named)["0.26.0"]).threshold or 0, 6
    )
    refusal = (refused / "bisect-two-releases.txt").read_text()
    assert "first_bad" not in refusal and "raise --repeat" in refusal
