"""How the matrix runner reads its own runs: root causes of failing cells, run
fingerprints, leg hygiene and inert arms. One seam between the runner and the
triage / fingerprint / hygiene libraries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllmdiag.engine import plan as planmod
from vllmdiag.envs.cache import Env
from vllmdiag.fingerprint import fingerprint_file
from vllmdiag.fingerprint.startup import dominant, dominant_json
from vllmdiag.hygiene import doctor, known_env_vars
from vllmdiag.model.inert import ArmEvidence, inert_reason, unknown_env_vars
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.verdict import BASELINE
from vllmdiag.triage import triage_file

#: Flag rejections and env warnings sit near the start of a log; a crash near its end.
_HEAD = 256 * 1024
_TAIL = 256 * 1024


@dataclass(frozen=True)
class HygieneSummary:
    per_leg: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def contaminated(self) -> bool:
        return any(r.get("contaminated") for r in self.per_leg.values())

    def notable(self, leg: str) -> list[tuple[str, str]]:
        """``(code, message)`` of the leg's warnings and contaminations."""
        r = self.per_leg.get(leg, {})
        return [
            (str(f.get("code")), str(f.get("message")))
            for f in r.get("findings", [])
            if f.get("severity") in ("contaminated", "warning")
        ]

    def contaminations(self) -> list[str]:
        return [
            f"{leg}: {f['message']}"
            for leg, r in self.per_leg.items()
            for f in r.get("findings", [])
            if f.get("severity") == "contaminated"
        ]

    def lines(self) -> list[str]:
        return [
            f"{leg}: {f['severity']}: {f['message']}"
            for leg, r in self.per_leg.items()
            for f in r.get("findings", [])
            if f.get("severity") in ("contaminated", "warning")
        ]

    def to_json(self) -> dict[str, Any]:
        return self.per_leg


class RunReaders:
    """A reader that breaks on an odd log must not cost the cell its result: the failure
    is recorded in the result (``reader_error``) and the run goes on."""

    def root_cause(self, log: Path) -> dict[str, Any] | None:
        try:
            triage = triage_file(log)
        except Exception as exc:  # a triage bug is recorded, never fatal to the cell
            return {"type": None, "message": None, "reader_error": f"triage failed: {exc!r}"}
        data: dict[str, Any] = triage.to_json()
        root = data.get("root_cause")
        if root is None:
            return {
                "type": None,
                "message": triage.note or "no traceback in the log",
                "signature": None,
                "known": None,
                "next_step": None,
                "process": None,
            }
        return dict(root)

    def run_fingerprint(
        self, log: Path, findings: Sequence[tuple[str, str]] = ()
    ) -> dict[str, Any] | None:
        """The run's fingerprint; a start-up phase that dominates is named with the leg's
        hygiene finding (``(code, message)``) that explains it."""
        try:
            fingerprint = fingerprint_file(log)
            fp: dict[str, Any] = fingerprint.to_json()
            if fingerprint.startup is not None:
                fp["startup_dominant"] = dominant_json(dominant(fingerprint.startup, findings))
        except Exception as exc:  # as above: recorded, not fatal
            return {"reader_error": f"fingerprint failed: {exc!r}"}
        return fp

    def hygiene(self, envs: Sequence[Env], recipe: Recipe) -> HygieneSummary:

        run_env = dict(recipe.baseline.env)
        per_leg = {}
        for env in envs:
            report = doctor(env, run_env=run_env)
            per_leg[env.spec.name] = report.to_json()
        return HygieneSummary(per_leg)

    def inert_arms(
        self, recipe: Recipe, results: Sequence[CellResult], envs: Mapping[str, Env]
    ) -> dict[str, str]:

        by_arm: dict[str, list[CellResult]] = {}
        for r in results:
            by_arm.setdefault(r.arm, []).append(r)
        base_fps = [r.run_fingerprint for r in by_arm.get(BASELINE, []) if r.run_fingerprint]
        known_cache: dict[str, frozenset[str] | None] = {}
        out = {}
        for arm in recipe.arms:
            leg = planmod.arm_leg(recipe, arm)
            env = envs.get(leg.key())
            # Only env arms need the leg's known variables; ask each leg once.
            if arm.env and env is not None and leg.key() not in known_cache:
                known_cache[leg.key()] = known_env_vars(env)
            cells = by_arm.get(arm.name, [])
            texts = [_read_bounded(Path(c.log_path)) for c in cells if c.log_path]
            env_error = next((c.reason for c in cells if "pin did not hold" in c.reason), "")
            evidence = ArmEvidence(
                arm=arm,
                stack=env.stack if env else {},
                known_env=known_cache.get(leg.key()),
                unknown_env_warnings=unknown_env_vars(texts),
                log_texts=texts,
                fingerprints=[c.run_fingerprint for c in cells if c.run_fingerprint],
                baseline_fingerprints=base_fps,
                env_error=env_error,
            )
            reason = inert_reason(evidence)
            if reason:
                out[arm.name] = reason
        return out


def _read_bounded(path: Path) -> str:
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            if size <= _HEAD + _TAIL:
                return fh.read().decode("utf-8", "replace")
            head = fh.read(_HEAD)
            fh.seek(size - _TAIL)
            return (head + b"\n...\n" + fh.read()).decode("utf-8", "replace")
    except OSError:
        return ""
