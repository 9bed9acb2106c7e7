"""How the cell runner reads its own runs: root causes of failing cells, run
fingerprints, leg hygiene and inert arms. One seam between the runner and the triage /
fingerprint / hygiene libraries, and the one place their results become the typed values
a cell result carries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from vllmdiag.errors import ConfigError, EnvError, PinNotHeld, ProcessError
from vllmdiag.model.fingerprint import Fingerprint
from vllmdiag.model.inert import ArmEvidence, inert_reason, unknown_env_vars
from vllmdiag.model.outcome import CauseSummary, CellResult
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.verdict import BASELINE
from vllmdiag.plan import cells as planmod
from vllmdiag.readers.fingerprint import fingerprint_file
from vllmdiag.readers.fingerprint.startup import dominant
from vllmdiag.readers.hygiene import CONTAMINATED, WARNING, DoctorReport, doctor, known_env_vars
from vllmdiag.readers.triage import triage_file
from vllmdiag.readers.triage.catalogue import ENV_VAR as CATALOGUE_VAR
from vllmdiag.readers.triage.catalogue import Catalogue
from vllmdiag.services.envs.cache import Env

#: Flag rejections and env warnings sit near the start of a log; a crash near its end.
_HEAD = 256 * 1024
_TAIL = 256 * 1024


@dataclass(frozen=True)
class HygieneSummary:
    """Each leg's doctor report, by leg name."""

    per_leg: dict[str, DoctorReport] = field(default_factory=dict)

    @property
    def contaminated(self) -> bool:
        return any(r.contaminated for r in self.per_leg.values())

    def contaminations(self) -> list[str]:
        return [f"{leg}: {reason}" for leg, r in self.per_leg.items() for reason in r.reasons()]

    def notable(self, leg: str) -> list[tuple[str, str]]:
        """``(code, message)`` of the leg's warnings and contaminations."""
        r = self.per_leg.get(leg)
        if r is None:
            return []
        return [(f.code, f.message) for f in r.findings if f.severity in (CONTAMINATED, WARNING)]

    def lines(self) -> list[str]:
        return [
            f"{leg}: {f.severity.value}: {f.message}"
            for leg, r in self.per_leg.items()
            for f in r.findings
            if f.severity in (CONTAMINATED, WARNING)
        ]


class RunReaders:
    """A reader that breaks on an odd log must not cost the cell its result: the failure
    is recorded in the result and the run goes on."""

    def check(self) -> None:
        """The catalogue every failing cell's triage would use loads, or the run stops
        before any cell: a broken ``$VLLMDIAG_CATALOGUE`` is the user's to fix, never a
        ``reader_error`` in each failing cell."""
        try:
            Catalogue.load()
        except ConfigError as exc:
            raise ConfigError(
                f"${CATALOGUE_VAR} names a catalogue that does not load: {exc.message}",
                where=exc.where,
                hint=f"fix it, or unset {CATALOGUE_VAR} (failing cells are triaged with it)",
            ) from None

    def root_cause(self, log: Path, tool_dirs: Sequence[str] = ()) -> CauseSummary:
        """The cell's root cause; ``tool_dirs``: directories vllmdiag wrote (the run
        directory), whose files are its own code besides its package."""
        try:
            triage = triage_file(log, tool_dirs=tool_dirs)
        except Exception as exc:  # a triage bug is recorded, never fatal to the cell
            return CauseSummary(reader_error=f"triage failed: {exc!r}")
        root = triage.root_cause
        if root is None:
            return CauseSummary(message=triage.note or "no root cause in the log")
        return CauseSummary(
            type=root.type or None,
            message=root.message,
            process=root.process,
            signature=root.signature,
            known=root.known,
            next_step=root.next_step,
            advice=root.advice,
            origin=root.origin,
            package=root.package,
            why=root.why or None,
            raised_in=root.raised_in,
            evidence=root.evidence,
            frames=tuple(root.frames),
            lines=root.lines,
        )

    def fingerprint(
        self, log: Path, findings: Sequence[tuple[str, str]] = ()
    ) -> tuple[Fingerprint | None, str | None]:
        """The run's fingerprint (a start-up phase that dominates named with the leg's
        hygiene finding that explains it), or None and why it could not be read."""
        try:
            fp = fingerprint_file(log)
        except Exception as exc:  # as above: recorded, not fatal
            return None, f"fingerprint failed: {exc!r}"
        top = dominant(fp.startup, findings) if fp.startup is not None else None
        return replace(fp, startup_dominant=top, path=None), None

    def hygiene(self, envs: Sequence[Env], recipe: Recipe) -> HygieneSummary:
        run_env = dict(recipe.baseline.env)
        return HygieneSummary({env.spec.name: doctor(env, run_env=run_env) for env in envs})

    def inert_arms(
        self,
        recipe: Recipe,
        results: Sequence[CellResult],
        envs: Mapping[str, Env],
        failures: Mapping[str, EnvError],
    ) -> dict[str, str]:
        """Arms that did not take effect, and why (see :mod:`vllmdiag.model.inert`)."""
        known_cache: dict[str, frozenset[str] | None] = {}
        for arm in recipe.arms:
            leg = planmod.arm_leg(recipe, arm)
            env = envs.get(leg.key())
            # Only env arms need the leg's known variables; ask each leg once.
            if arm.env and env is not None and leg.key() not in known_cache:
                known_cache[leg.key()] = _known_env_vars(env)
        return inert_from(
            recipe,
            results,
            versions={k: dict(e.stack.versions()) for k, e in envs.items()},
            known_env=known_cache,
            pin_not_held={k: f.problems for k, f in failures.items() if isinstance(f, PinNotHeld)},
        )


def inert_from(
    recipe: Recipe,
    results: Sequence[CellResult],
    versions: Mapping[str, Mapping[str, str]],
    known_env: Mapping[str, frozenset[str] | None] | None = None,
    pin_not_held: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, str]:
    """Arms that did not take effect, and why, from what the run recorded: each leg's
    versions (by leg key), the cells' logs and fingerprints; the leg's known environment
    variables and the pins that did not hold where they are known (a run read back from
    its directory has only what it wrote)."""
    by_arm: dict[str, list[CellResult]] = {}
    for r in results:
        by_arm.setdefault(r.arm, []).append(r)
    base_fps = [r.fingerprint for r in by_arm.get(BASELINE, []) if r.fingerprint]
    out = {}
    for arm in recipe.arms:
        key = planmod.arm_leg(recipe, arm).key()
        cells = by_arm.get(arm.name, [])
        texts = [_read_bounded(Path(c.log)) for c in cells if c.log]
        evidence = ArmEvidence(
            arm=arm,
            versions=versions.get(key, {}),
            known_env=(known_env or {}).get(key),
            unknown_env_warnings=unknown_env_vars(texts),
            log_texts=texts,
            fingerprints=[c.fingerprint for c in cells if c.fingerprint],
            baseline_fingerprints=base_fps,
            pin_not_held=(pin_not_held or {}).get(key, ()),
        )
        reason = inert_reason(evidence)
        if reason:
            out[arm.name] = reason
    return out


def _known_env_vars(env: Env) -> frozenset[str] | None:
    """The leg's known variables, or None where its python cannot be asked from here (a
    leg on another node of a cluster): vLLM's own warning in the log then decides."""
    try:
        return known_env_vars(env)
    except (EnvError, ProcessError):
        return None


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
