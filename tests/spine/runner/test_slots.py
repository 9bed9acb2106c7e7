"""GPU slots: how many GPUs a cell needs, the scheduler against a simple oracle, and the
local executor with fake slots (real processes, real CUDA_VISIBLE_DEVICES values, cells
overlapping in time; a metric matrix stays strictly serial)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support import observe
from tests.support.paths import REPO
from vllmdiag import codec
from vllmdiag.cli.app import app
from vllmdiag.errors import ConfigError
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.plan import expand
from vllmdiag.services.config import load_recipe
from vllmdiag.spine.runner.events import CellSpawned, CellStarted
from vllmdiag.spine.runner.slots import (
    GpuNeed,
    NodeSlots,
    SlotScheduler,
    gpus_needed,
    local_gpu_ids,
)

STAMP = """
import json, os, sys, time
out, seconds = sys.argv[1], float(sys.argv[2])
start = time.time()
time.sleep(seconds)
json.dump({"cvd": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": start, "end": time.time()},
          open(os.path.join(out, "stamp.json"), "w"))
print("tokens/s: 100.0")
"""


# -- how many GPUs a cell needs -------------------------------------------------------------


def _needs(tmp_path: Path, body: str) -> dict[str, GpuNeed]:
    rec = load_recipe(observe.stamp_recipe(tmp_path, "slots", STAMP, body))
    return {c.id: gpus_needed(rec, c) for c in expand(rec)}


def test_gpu_need_from_parallel_sizes_in_every_spelling(tmp_path: Path) -> None:
    needs = _needs(
        tmp_path,
        """
        arms:
          - {name: tp2, flag: -tp 2}
          - {name: tp4eq, flag: --tensor-parallel-size=4}
          - {name: pp, flag: --pipeline_parallel_size 2}
        workloads:
          w: {command: "{python} stamp.py {out_dir} 0 {flags}"}
          dp: {command: "{python} stamp.py {out_dir} 0 {flags}", args: [-dp, "2"]}
        """,
    )
    assert needs["r1.baseline.w"].count == 1
    assert needs["r1.tp2.w"] == GpuNeed(2, "tensor-parallel 2")
    assert needs["r1.tp4eq.w"].count == 4
    assert needs["r1.pp.w"].count == 2
    assert needs["r1.tp2.dp"] == GpuNeed(4, "data-parallel 2 × tensor-parallel 2")


def test_declared_gpus_win_and_zero_means_none(tmp_path: Path) -> None:
    needs = _needs(
        tmp_path,
        """
        gpus: 0
        arms:
          - {name: tp2, flag: -tp 2}
        workloads:
          cpu: {command: "{python} stamp.py {out_dir} 0"}
          big: {command: "{python} stamp.py {out_dir} 0 {flags}", gpus: 8}
        """,
    )
    assert needs["r1.baseline.cpu"] == GpuNeed(0, "gpus: 0 in the recipe")
    assert needs["r1.tp2.cpu"].count == 0
    assert needs["r1.tp2.big"].count == 8


def test_shipped_cpu_reproduction_needs_no_gpu() -> None:
    rec = load_recipe(REPO / "recipes/thrmma-cpu.yaml")
    assert {gpus_needed(rec, c).count for c in expand(rec)} == {0}


def test_a_negative_gpu_count_is_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="gpus"):
        _needs(tmp_path, "workloads:\n  w: {command: 'true', gpus: -1}\n")


# -- the scheduler against an oracle --------------------------------------------------------


def test_shared_slots_are_disjoint_and_fill_every_gpu() -> None:
    s = SlotScheduler([NodeSlots("a", "a", ("0", "1", "2", "3"))], exclusive=False)
    one, two = GpuNeed(1, ""), GpuNeed(2, "")
    p1 = s.place(two, {"a"})
    p2 = s.place(one, {"a"})
    p3 = s.place(one, {"a"})
    assert p1 and p2 and p3
    assert (p1.visible, p2.visible, p3.visible) == ("0,1", "2", "3")
    assert s.place(one, {"a"}) is None  # every GPU taken
    s.release(p1)
    p4 = s.place(two, {"a"})
    assert p4 is not None and p4.visible == "0,1"


def test_exclusive_nodes_run_one_cell_holding_every_gpu() -> None:
    s = SlotScheduler(
        [NodeSlots("a", "a", ("0", "1")), NodeSlots("b", "b", ("0", "1"))], exclusive=True
    )
    p1 = s.place(GpuNeed(1, ""), {"a", "b"})
    p2 = s.place(GpuNeed(1, ""), {"a", "b"})
    assert p1 and p2 and {p1.node, p2.node} == {"a", "b"}
    assert p1.visible is None and p1.gpus == ("0", "1") and p1.whole
    assert s.place(GpuNeed(0, ""), {"a", "b"}) is None


def test_a_cell_too_big_for_every_node_says_why() -> None:
    s = SlotScheduler(
        [NodeSlots("a", "host-a", ("0", "1")), NodeSlots("b", "host-b", ())], exclusive=False
    )
    why = s.unplaceable(GpuNeed(4, "tensor-parallel 4"), {"a", "b"})
    assert why == "it needs 4 GPU(s) (tensor-parallel 4) and the largest node has 2 (node host-a)"
    assert s.unplaceable(GpuNeed(0, ""), {"b"}) is None
    s.drop("a")
    assert s.unplaceable(GpuNeed(1, ""), {"a"}) == "no live node has its leg"


def test_unknown_gpus_run_one_cell_at_a_time_and_check_nothing() -> None:
    s = SlotScheduler([NodeSlots("a", "a", None)], exclusive=False)
    p = s.place(GpuNeed(8, ""), {"a"})
    assert p is not None and p.visible is None
    assert s.place(GpuNeed(0, ""), {"a"}) is None
    s.release(p)
    assert s.place(GpuNeed(0, ""), {"a"}) is not None


def test_random_schedules_keep_every_invariant() -> None:
    rng = random.Random(7)
    for _ in range(200):
        nodes = [
            NodeSlots(f"n{i}", f"n{i}", tuple(str(g) for g in range(rng.randint(0, 4))))
            for i in range(rng.randint(1, 3))
        ]
        exclusive = rng.random() < 0.3
        s = SlotScheduler(nodes, exclusive=exclusive)
        running = []
        for _step in range(40):
            if running and rng.random() < 0.4:
                s.release(running.pop(rng.randrange(len(running))))
                continue
            need = GpuNeed(rng.randint(0, 3), "")
            whole = rng.random() < 0.1
            p = s.place(need, {n.id for n in nodes}, whole=whole)
            if p is None:
                continue
            running.append(p)
            for node in nodes:
                here = [r for r in running if r.node == node.id]
                held = [g for r in here if r.visible is not None for g in r.gpus]
                assert len(held) == len(set(held)), "a GPU given to two cells"
                assert len(here) <= (1 if exclusive else max(1, len(node.gpus or ())))
                if any(r.whole for r in here):
                    assert len(here) == 1
            assert p.whole or exclusive or len(p.gpus) == need.count


def test_local_gpu_ids(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert local_gpu_ids() == ("2", "3")
    assert local_gpu_ids(1) == ("2",)
    with pytest.raises(ConfigError, match="this node has 2 GPU"):
        local_gpu_ids(4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,-1,2")
    assert local_gpu_ids() == ("1",)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi: a machine without GPUs
    assert local_gpu_ids() is None
    assert local_gpu_ids(3) == ("0", "1", "2")


# -- the local executor with fake slots, for real --------------------------------------------


def test_pass_fail_cells_share_the_node_on_disjoint_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    path = observe.stamp_recipe(
        tmp_path,
        "slots",
        STAMP,
        """
        arms:
          - {name: a1, env: {A: "1"}}
          - {name: a2, env: {A: "2"}}
          - {name: tp2, flag: -tp 2}
        workloads:
          w: {command: "{python} {recipe_dir}/stamp.py {out_dir} 1.5 {flags}"}
        timeout: 60
        """,
    )
    run_dir = tmp_path / "run"
    args = ["matrix", str(path), "--out", str(run_dir), "--gpus", "3", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    stamps = observe.stamps(run_dir)
    assert set(stamps) == {"r1.baseline.w", "r1.a1.w", "r1.a2.w", "r1.tp2.w"}
    pair = str(stamps["r1.tp2.w"]["cvd"]).split(",")
    assert len(set(pair)) == 2 and set(pair) <= {"0", "1", "2"}
    assert all(s["cvd"] in ("0", "1", "2") for k, s in stamps.items() if k != "r1.tp2.w")
    overlapping = 0
    names = sorted(stamps)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if observe.overlap(stamps[a], stamps[b]):
                overlapping += 1
                mine = set(str(stamps[a]["cvd"]).split(","))
                theirs = set(str(stamps[b]["cvd"]).split(","))
                assert not mine & theirs, f"{a} and {b} ran at once on one GPU"
    assert overlapping >= 2, "no two cells ran at once"
    started = [
        json.loads(x)
        for x in (run_dir / "run.jsonl").read_text().splitlines()
        if '"cell_started"' in x
    ]
    assert {e["gpus"] for e in started} == {s["cvd"] for s in stamps.values()}
    report = json.loads(result.stdout)
    assert {c["outcome"] for c in report["cells"]} == {"pass"}
    assert [c["id"] for c in report["cells"]] == [
        "r1.baseline.w",
        "r1.a1.w",
        "r1.a2.w",
        "r1.tp2.w",
    ]


def test_a_metric_matrix_stays_serial_and_too_big_a_cell_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    path = observe.stamp_recipe(
        tmp_path,
        "slots",
        STAMP,
        """
        arms:
          - {name: a1, env: {A: "1"}}
          - {name: tp8, flag: -tp 8}
        workloads:
          w: {command: "{python} {recipe_dir}/stamp.py {out_dir} 0.5 {flags}"}
        metrics:
          - {name: tps, regex: 'tokens/s: ([0-9.]+)'}
        repeats: 2
        timeout: 60
        """,
    )
    run_dir = tmp_path / "run"
    args = ["matrix", str(path), "--out", str(run_dir), "--gpus", "4", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    stamps = observe.stamps(run_dir)
    assert len(stamps) == 4
    names = sorted(stamps)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not observe.overlap(stamps[a], stamps[b]), f"{a} and {b} overlapped"
    assert {s["cvd"] for s in stamps.values()} == {None}  # the node's own setting
    cells = {c["id"]: c for c in json.loads(result.stdout)["cells"]}
    big = cells["r1.tp8.w"]
    assert big["outcome"] == "error"
    assert big["reason"] == (
        "not run: it needs 8 GPU(s) (tensor-parallel 8) and the largest node has 4 (the node)"
    )


def test_too_many_gpus_for_this_machine_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.chdir(tmp_path)  # the default run directory goes under ./runs
    path = observe.stamp_recipe(tmp_path, "slots", STAMP, "workloads:\n  w: {command: 'true'}\n")
    result = CliRunner().invoke(app, ["matrix", str(path), "--gpus", "2", "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)
    assert "--gpus 2, but this node has 1 GPU" in error["error"]
    assert "Traceback" not in result.output


def test_new_result_and_event_fields_round_trip() -> None:
    result = CellResult("r1.a.w", "a", "w", 1, Outcome.ERROR, None, 0.0, node="vm-1234abcd")
    assert codec.load(CellResult, codec.dump(result)) == result
    started = CellStarted(
        1, 2, "r1.a.w", "a", "w", 1, "leg", ("x",), {}, "k", "h", Path("/l"), "n", "0,1"
    )
    assert codec.load(CellStarted, codec.dump(started)) == started
    spawned = CellSpawned("r1.a.w", 5, 5, 5, None, node="vm-1234abcd")
    assert codec.load(CellSpawned, codec.dump(spawned)) == spawned
