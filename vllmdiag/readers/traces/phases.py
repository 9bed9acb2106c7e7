"""Engine steps from the ranges a trace carries, in every spelling vLLM has used.

- ``execute_new_{n}_cached_{m}`` (vLLM's worker before the context/generation rename):
  ``n`` newly scheduled requests (their prefill runs in this step), ``m`` cached ones
  (decoding, or continuing a chunked prefill).
- ``execute_context_{n}({ctx})_generation_{m}({gen})``: ``n`` requests in context
  (prefill) with ``ctx`` tokens, ``m`` requests generating with ``gen`` tokens.
- ``execute_{t}_context_{n}(sq{ctx}sk..sqsq..sqsk..)_generation_{m}(sq{gen}sk..sqsq..
  sqsk..)``: the same with roofline terms (vLLM's ``detailed_trace_annotation``).
- vllmdiag's own launcher: ``vllmdiag:step#i`` inside ``vllmdiag:measured``.
- torch's ``ProfilerStep#i``.

Anything else is a plain user (NVTX) range, summed by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFILL = "prefill-heavy"
DECODE = "decode-only"
MIXED = "mixed"
STEP = "step"  # a step whose work is not described by its name

#: Phase kinds in display order.
KINDS: tuple[str, ...] = (PREFILL, MIXED, DECODE, STEP)

_NEW_CACHED = re.compile(r"^execute_new_(\d+)_cached_(\d+)$")
_CTX_GEN = re.compile(r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$")
_DETAILED = re.compile(
    r"^execute_\d+_context_(\d+)\(sq(\d+)sk\d+sqsq\d+sqsk\d+\)"
    r"_generation_(\d+)\(sq(\d+)sk\d+sqsq\d+sqsk\d+\)$"
)
_LAUNCHER = re.compile(r"^vllmdiag:step#(\d+)$")
_PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")

MEASURED = "vllmdiag:measured"


@dataclass(frozen=True)
class StepName:
    """What a step annotation says about the step's work."""

    kind: str
    spelling: str  # new_cached, context_generation, detailed, launcher, profiler_step
    prefill_reqs: int | None = None
    decode_reqs: int | None = None
    prefill_tokens: int | None = None
    decode_tokens: int | None = None

    @property
    def output_tokens(self) -> int | None:
        """Tokens the step generates, where the name tells: one per generating request."""
        return self.decode_reqs if self.spelling in ("context_generation", "detailed") else None


def parse_step(name: str) -> StepName | None:
    """The step an annotation names, or None when it is not a step annotation."""
    if not name or name[0] not in "evP":  # cheap reject: most ranges are not steps
        return None
    for pattern, spelling in ((_CTX_GEN, "context_generation"), (_DETAILED, "detailed")):
        m = pattern.match(name)
        if m:
            n, ctx, g, gen = (int(x) for x in m.groups())
            if n == 0:
                kind = DECODE
            elif g == 0 or ctx >= gen:
                kind = PREFILL
            else:
                kind = MIXED
            return StepName(kind, spelling, n, g, ctx, gen)
    m = _NEW_CACHED.match(name)
    if m:
        new, cached = int(m.group(1)), int(m.group(2))
        # new requests run their prefill in this step; cached ones mostly decode
        kind = DECODE if new == 0 else PREFILL if cached == 0 or new >= cached else MIXED
        return StepName(kind, "new_cached", new, cached)
    if _LAUNCHER.match(name):
        return StepName(STEP, "launcher")
    if _PROFILER_STEP.match(name):
        return StepName(STEP, "profiler_step")
    return None


def is_step(name: str) -> bool:
    return parse_step(name) is not None
