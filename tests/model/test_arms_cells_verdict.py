"""Pure tests: arm validation, cell expansion, fingerprints and the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from vllmdiag.model.arms import Arm, ArmKind, Flag
from vllmdiag.model.decide import decide
from vllmdiag.model.fingerprint import Fingerprint
from vllmdiag.model.inert import ArmEvidence, inert_reason
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.verdict import ArmInfo, Effect, MetricInfo
from vllmdiag.plan import cells as plan
from vllmdiag.services.envs.spec import LegSpec


def test_flag_parse_forms() -> None:
    assert Flag.parse("--enforce-eager") == Flag(name="--enforce-eager")
    assert Flag.parse("--moe-backend triton").argv() == ["--moe-backend", "triton"]
    assert Flag.parse("--gpu-memory-utilization=0.5").value == "0.5"
    with pytest.raises(ValueError, match="more than one flag"):
        Flag.parse("--enforce-eager --moe-backend triton")
    with pytest.raises(ValueError, match="starts with '-'"):
        Flag.parse("enforce-eager")


def test_arm_kinds() -> None:
    assert Arm(name="a", env={"X": "1"}).kind is ArmKind.ENV
    assert Arm(name="a", pin="pkg==1.0").kind is ArmKind.PIN
    assert Arm(name="a", flag="--enforce-eager").kind is ArmKind.FLAG
    assert Arm(name="a", leg="other").kind is ArmKind.LEG


@pytest.mark.parametrize(
    "fields",
    [
        {"env": {"A": "1", "B": "2"}},
        {"env": {"A": "1"}, "flag": "--enforce-eager"},
        {"pin": ["a==1", "b==2"]},
        {"flag": ["--x", "--y"]},
    ],
)
def test_arm_with_two_variables_is_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="changes 2 things"):
        Arm(name="two", **fields)  # type: ignore[arg-type]


def test_compound_arm_is_allowed_but_not_single_variable() -> None:
    arm = Arm(name="both", env={"A": "1"}, flag="--x", compound=True)
    assert not arm.single_variable
    assert arm.describe() == "env A=1; flag --x"


def test_arm_must_change_something_and_pins_must_parse() -> None:
    with pytest.raises(ValidationError, match="must change something"):
        Arm(name="nothing")
    with pytest.raises(ValidationError, match="not a PEP 508"):
        Arm(name="bad", pin="nvidia-cutlass-dsl=4.5.3")


def _recipe(**extra: object) -> Recipe:
    data: dict[str, object] = {
        "name": "r",
        "question": "q?",
        "legs": {"a": {"requirements": ["pkg==1"]}, "b": {"requirements": ["pkg==2"]}},
        "baseline": {"leg": "a", "flags": ["--max-model-len 4096"], "env": {"E": "0"}},
        "workloads": {"w1": {"command": ["x", "{flags}"]}, "w2": {"command": "y {flags}"}},
        "arms": [
            Arm(name="eager", flag="--enforce-eager"),
            Arm(name="len", flag="--max-model-len 8192"),
            Arm(name="pin", pin="dep==3"),
            Arm(name="env", env={"E": "1"}),
        ],
        "controls": [Arm(name="b", leg="b")],
        "repeats": 2,
    }
    data.update(extra)
    return Recipe.model_validate(data)


def test_expand_orders_repeats_outermost_and_derives_pin_legs() -> None:
    cells = plan.expand(_recipe())
    assert len(cells) == 2 * 6 * 2
    assert [c.repeat for c in cells[:12]] == [1] * 12
    assert [c.id for c in cells[:3]] == ["r1.baseline.w1", "r1.baseline.w2", "r1.eager.w1"]
    by_id = {c.id: c for c in cells}
    pin = by_id["r1.pin.w1"]
    assert pin.leg.requirements == ("pkg==1", "dep==3") and pin.leg.pins == ("dep==3",)
    assert by_id["r2.b.w2"].leg.requirements == ("pkg==2",)
    assert by_id["r1.env.w1"].env == {"E": "1"}
    # an arm's flag replaces the baseline flag of the same name
    assert [str(f) for f in by_id["r1.len.w1"].flags] == ["--max-model-len 8192"]
    assert len(plan.legs_needed(cells)) == 3


def test_pin_replaces_same_named_requirement() -> None:
    leg = LegSpec("fresh", ("nvidia-cutlass-dsl", "numpy")).with_pin("nvidia_cutlass_dsl==4.5.3")
    assert leg.requirements == ("numpy", "nvidia_cutlass_dsl==4.5.3")
    assert leg.key() != LegSpec("fresh", ("nvidia-cutlass-dsl", "numpy")).key()


def test_fingerprint_changes_with_each_input() -> None:
    cell = plan.expand(_recipe())[0]
    base = plan.reuse_key(cell, "lock", ["x"], "w1")
    assert plan.reuse_key(cell, "lock2", ["x"], "w1") != base
    assert plan.reuse_key(cell, "lock", ["x", "--y"], "w1") != base
    assert plan.reuse_key(cell, "lock", ["x"], "w2") != base
    other = plan.expand(_recipe())[24 // 2]  # same arm and workload, repeat 2
    assert other.repeat == 2 and plan.reuse_key(other, "lock", ["x"], "w1") != base


def _r(
    arm: str, wl: str, outcome: str, rep: int = 1, rc: int | None = None, **metrics: float
) -> CellResult:
    out = Outcome(outcome)
    code = rc if rc is not None else (0 if out is Outcome.PASS else 1)
    return CellResult(f"r{rep}.{arm}.{wl}", arm, wl, rep, out, code, 1.0, dict(metrics))


ARMS = [
    ArmInfo("eager", "flag"),
    ArmInfo("pin", "pin"),
    ArmInfo("half", "flag"),
    ArmInfo("v26", "leg", control=True),
]


def test_pass_fail_verdict_like_diag_silent4() -> None:
    wls = ["whisper", "qwen2", "qwen3", "omni"]
    results = [_r("baseline", w, "fail") for w in wls]
    results += [_r("eager", w, "fail") for w in wls]
    results += [_r("pin", w, "pass") for w in wls]
    results += [_r("half", w, "pass" if w == "omni" else "fail") for w in wls]
    results += [_r("v26", w, "pass") for w in wls]
    v = decide(ARMS, wls, results)
    effects = {a.name: a.effect for a in v.arms}
    assert effects == {
        "eager": Effect.RULED_OUT,
        "pin": Effect.SUFFICIENT,
        "half": Effect.PARTIAL,
        "v26": Effect.CONTROL,
    }
    assert v.failing_workloads == tuple(wls)
    assert "leg-specific" in next(a.detail for a in v.arms if a.name == "v26")
    assert "Sufficient (single-variable arm): pin" in v.summary


def test_errors_are_never_results_and_failing_control_is_reported() -> None:
    wls = ["w"]
    results = [
        _r("baseline", "w", "fail"),
        _r("eager", "w", "error"),
        _r("pin", "w", "pass"),
        _r("half", "w", "timeout"),
        _r("v26", "w", "fail"),
    ]
    v = decide(ARMS, wls, results)
    eff = {a.name: a for a in v.arms}
    assert eff["eager"].effect is Effect.ERROR
    assert eff["half"].effect is Effect.RULED_OUT and eff["half"].workloads["w"].label == "timeout"
    assert "not specific to the baseline leg" in eff["v26"].detail


def test_inert_arm_is_not_ruled_out() -> None:
    results = [
        _r("baseline", "w", "fail"),
        _r("eager", "w", "fail"),
        _r("pin", "w", "pass"),
        _r("half", "w", "fail"),
        _r("v26", "w", "pass"),
    ]
    v = decide(ARMS, ["w"], results, inert={"eager": "the leg's CLI rejects --enforce-eager"})
    eager = next(a for a in v.arms if a.name == "eager")
    assert eager.effect is Effect.INERT and "rejects" in eager.detail
    assert "Inert (proves nothing): eager" in v.summary


def test_baseline_passing_everywhere_has_nothing_to_explain() -> None:
    results = [_r(a, "w", "pass") for a in ("baseline", "eager", "pin", "half", "v26")]
    v = decide(ARMS, ["w"], results)
    assert v.failing_workloads == ()
    assert "no failure to explain" in v.summary


def test_flaky_baseline_counts_as_failing_and_majority_decides() -> None:
    results = [
        _r("baseline", "w", "fail", 1),
        _r("baseline", "w", "pass", 2),
        _r("pin", "w", "pass", 1),
        _r("pin", "w", "pass", 2),
    ]
    v = decide([ArmInfo("pin", "pin")], ["w"], results)
    assert v.baseline["w"].state == "flaky" and v.arms[0].effect is Effect.SUFFICIENT


def _m(arm: str, values: list[float]) -> list[CellResult]:
    return [_r(arm, "image", "pass", i + 1, tps=v) for i, v in enumerate(values)]


def test_metric_verdict_like_the_moe_backend_matrix() -> None:
    arms = [
        ArmInfo("trtllm", "flag"),
        ArmInfo("triton", "flag"),
        ArmInfo("cutlass", "flag"),
        ArmInfo("v18", "leg", control=True),
    ]
    results = (
        _m("baseline", [5536, 5500, 5560])
        + _m("trtllm", [5614, 5540, 5580])
        + _m("triton", [5782, 5800, 5770])
        + _m("v18", [7457, 7430, 7480])
        + [_r("cutlass", "image", "fail", i) for i in (1, 2, 3)]
    )
    v = decide(arms, ["image"], results, metrics={"image": MetricInfo("tps")}, target="v18")
    a = {x.name: x for x in v.arms}
    assert a["trtllm"].effect is Effect.RULED_OUT
    assert a["trtllm"].workloads["image"].difference_detected is False  # inside the measured spread
    # 1.04x is beyond the measured spread (under 1 %) but inside the 5 % floor: not called
    assert a["triton"].effect is Effect.RULED_OUT
    assert "no difference detected" in a["triton"].detail
    assert a["cutlass"].effect is Effect.ERROR
    assert a["v18"].effect is Effect.CONTROL
    base = v.baseline["image"]
    assert base.median == 5536 and base.spread == pytest.approx(60 / 5536)
    assert a["triton"].workloads["image"].ratio == pytest.approx(5782 / 5536)


def test_metric_arm_reaching_the_target_is_sufficient() -> None:
    arms = [ArmInfo("fix", "pin"), ArmInfo("v18", "leg", control=True)]
    results = (
        _m("baseline", [100, 101, 99]) + _m("fix", [140, 141, 139]) + _m("v18", [141, 140, 142])
    )
    v = decide(arms, ["image"], results, metrics={"image": MetricInfo("tps")})
    assert v.arms[0].effect is Effect.SUFFICIENT


def test_lower_is_better_metrics() -> None:
    arms = [ArmInfo("fast", "flag")]
    results = _m("baseline", [10.0, 10.1, 9.9]) + _m("fast", [8.0, 8.1, 7.9])
    v = decide(arms, ["image"], results, metrics={"image": MetricInfo("tps", better="lower")})
    assert v.arms[0].effect is Effect.PARTIAL  # improves; no target to call it sufficient


def test_inert_reasons() -> None:
    legacy = Arm(
        name="attn", env={"VLLM_ATTENTION_BACKEND": "TRITON_ATTN"}, honoured_by="vllm<0.14"
    )
    assert "ignores this arm" in (inert_reason(ArmEvidence(legacy, {"vllm": "0.18.0"})) or "")
    assert inert_reason(ArmEvidence(legacy, {"vllm": "0.11.0"})) is None
    unknown = Arm(name="u", env={"VLLM_FOO": "1"})
    assert "does not know" in (
        inert_reason(ArmEvidence(unknown, known_env=frozenset({"VLLM_BAR"}))) or ""
    )
    flag = Arm(name="moe", flag="--moe-backend triton")
    log = "vllm: error: unrecognized arguments: --moe-backend triton\n"
    assert "rejects --moe-backend" in (inert_reason(ArmEvidence(flag, log_texts=[log])) or "")
    eager = Arm(name="e", flag="--enforce-eager", fingerprint_field="cuda_graphs")
    same = ArmEvidence(
        eager,
        fingerprints=[Fingerprint(cuda_graphs="graphs")],
        baseline_fingerprints=[Fingerprint(cuda_graphs="graphs")],
    )
    assert "stayed 'graphs'" in (inert_reason(same) or "")
    moved = ArmEvidence(
        eager,
        fingerprints=[Fingerprint(cuda_graphs="eager")],
        baseline_fingerprints=[Fingerprint(cuda_graphs="graphs")],
    )
    assert inert_reason(moved) is None


def test_inert_env_arm_from_the_log_warning_and_the_legs_own_envs() -> None:
    legacy = Arm(name="attn", env={"VLLM_ATTENTION_BACKEND": "TRITON_ATTN"})
    warned = ArmEvidence(legacy, unknown_env_warnings=frozenset({"VLLM_ATTENTION_BACKEND"}))
    assert "Unknown vLLM environment variable detected" in (inert_reason(warned) or "")
    known = frozenset({"VLLM_LOGGING_LEVEL", "VLLM_USE_DEEP_GEMM"})
    assert inert_reason(ArmEvidence(legacy, known_env=known)) is not None
    deep = Arm(name="deep", env={"VLLM_USE_DEEP_GEMM": "1"})
    assert inert_reason(ArmEvidence(deep, known_env=known)) is None
    omp = Arm(name="omp", env={"OMP_NUM_THREADS": "1"})
    assert inert_reason(ArmEvidence(omp, known_env=known)) is None  # not vLLM's to judge
    assert inert_reason(ArmEvidence(legacy)) is None  # nothing known: proves nothing


def test_inert_pin_and_a_fingerprint_the_log_does_not_state() -> None:
    pin = Arm(name="p", pin="nvidia-cutlass-dsl==4.5.3")
    held = ("nvidia-cutlass-dsl==4.8.1 does not satisfy ==4.5.3",)
    said = inert_reason(ArmEvidence(pin, pin_not_held=held)) or ""
    assert said == "the pin did not hold: " + held[0]
    kv = Arm(name="kv", flag="--gpu-memory-utilization 0.5", fingerprint_field="kv_cache_tokens")
    unknown = ArmEvidence(
        kv,
        fingerprints=[Fingerprint(kv_cache_tokens=None)],
        baseline_fingerprints=[Fingerprint(kv_cache_tokens=None)],
    )
    assert inert_reason(unknown) is None  # a log that does not say proves nothing


def test_recipe_paths() -> None:
    r = _recipe(source=Path("/x/recipes/r.yaml"))
    assert r.recipe_dir == Path("/x/recipes")
    assert not r.is_metric_matrix
