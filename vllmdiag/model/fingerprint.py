"""A run's fingerprint: what it actually did, as its log says (pure values; the reader
is :mod:`vllmdiag.readers.fingerprint`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

from vllmdiag.model.shape import WorkloadShape
from vllmdiag.model.startup import Dominant, StartupTimeline


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
    #: The start-up phase that dominates, with the leg's hygiene finding explaining it
    #: (set where the leg is known: a matrix cell, ``fingerprint --leg``).
    startup_dominant: Dominant | None = None
    path: str | None = None

    @staticmethod
    def field_names() -> list[str]:
        """The fields compared one by one (the start-up timeline is diffed by phase)."""
        skip = ("path", "startup", "startup_dominant")
        return [f.name for f in fields(Fingerprint) if f.name not in skip]


class FieldStatus(str, Enum):
    """``missing``: a log does not say, so nothing is ruled out by it."""

    SAME = "same"
    DIFFERENT = "different"
    MISSING = "missing"


@dataclass(frozen=True)
class FieldDiff:
    """One field of two fingerprints."""

    field: str
    a: Any
    b: Any
    status: FieldStatus


def fingerprint_diff(a: Fingerprint, b: Fingerprint) -> list[FieldDiff]:
    """Field by field: the seeds' "ruled out so far" table, generated."""
    out = []
    for name in Fingerprint.field_names():
        va, vb = getattr(a, name), getattr(b, name)
        if isinstance(va, WorkloadShape) and isinstance(vb, WorkloadShape):
            status = (
                FieldStatus.SAME if va.comparable() == vb.comparable() else FieldStatus.DIFFERENT
            )
            out.append(FieldDiff(name, va.describe(), vb.describe(), status))
            continue
        if isinstance(va, WorkloadShape):
            va = va.describe()
        if isinstance(vb, WorkloadShape):
            vb = vb.describe()
        empty_a = va is None or va == ()
        empty_b = vb is None or vb == ()
        if isinstance(va, tuple) and isinstance(vb, tuple):
            status = FieldStatus.SAME if va == vb else FieldStatus.DIFFERENT
        elif empty_a or empty_b:
            status = FieldStatus.MISSING
        else:
            status = FieldStatus.SAME if va == vb else FieldStatus.DIFFERENT
        out.append(FieldDiff(name, va, vb, status))
    return out
