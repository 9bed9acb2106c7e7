"""A run's fingerprint: what it actually did, read from its log."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from vllmdiag.fingerprint.startup import StartupTimeline
from vllmdiag.model.shape import WorkloadShape


@dataclass(frozen=True)
class Fingerprint:
    """Each field is None where the log does not say."""

    vllm_version: str | None = None
    model: str | None = None
    tensor_parallel_size: int | None = None
    attention_backend: str | None = None
    mm_encoder_attention_backend: str | None = None
    moe_backend: str | None = None
    prepare_finalize: str | None = None
    moe_sm_split: str | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    chunked_prefill: bool | None = None
    max_num_batched_tokens: int | None = None
    cuda_graphs: str | None = None  # "graphs" | "eager"
    enforce_eager: bool | None = None
    gpu_memory_utilization: float | None = None
    encoder_cache_budget: int | None = None
    omp_num_threads: int | None = None
    unknown_env_vars: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    workload: WorkloadShape | None = None
    startup: StartupTimeline | None = None
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["unknown_env_vars"] = list(self.unknown_env_vars)
        data["plugins"] = list(self.plugins)
        return data

    @staticmethod
    def field_names() -> list[str]:
        """The fields compared one by one (the start-up timeline is diffed by phase)."""
        return [f.name for f in fields(Fingerprint) if f.name not in ("path", "startup")]


@dataclass(frozen=True)
class FieldDiff:
    """One field of two fingerprints: ``same``, ``different`` or ``missing`` (a log does
    not say, so nothing is ruled out by it)."""

    field: str
    a: Any
    b: Any
    status: str

    def to_json(self) -> dict[str, Any]:
        a = list(self.a) if isinstance(self.a, tuple) else self.a
        b = list(self.b) if isinstance(self.b, tuple) else self.b
        return {"field": self.field, "a": a, "b": b, "status": self.status}


def fingerprint_diff(a: Fingerprint, b: Fingerprint) -> list[FieldDiff]:
    """Field by field: the seeds' "ruled out so far" table, generated."""
    out = []
    for name in Fingerprint.field_names():
        va, vb = getattr(a, name), getattr(b, name)
        if isinstance(va, WorkloadShape) and isinstance(vb, WorkloadShape):
            status = "same" if va.comparable() == vb.comparable() else "different"
            out.append(FieldDiff(name, va.describe(), vb.describe(), status))
            continue
        if isinstance(va, WorkloadShape):
            va = va.describe()
        if isinstance(vb, WorkloadShape):
            vb = vb.describe()
        empty_a = va is None or va == ()
        empty_b = vb is None or vb == ()
        if isinstance(va, tuple) and isinstance(vb, tuple):
            status = "same" if va == vb else "different"
        elif empty_a or empty_b:
            status = "missing"
        else:
            status = "same" if va == vb else "different"
        out.append(FieldDiff(name, va, vb, status))
    return out
