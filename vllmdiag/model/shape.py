"""Did the workload take the shape the recipe asked? Pure.

A benchmark can run another workload than the one asked for and say so only in a warning:
vLLM's random dataset has ``--random-input-len`` / ``--random-output-len`` defaults (1024
/ 128) that win over ``--input-len`` / ``--output-len``. Two legs compared on different
workloads compare nothing, so after every cell the totals the benchmark reports are
checked against what the recipe asked, within the range the dataset itself states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Re-tokenising random prompts can shift a total a little beyond the stated mismatch.
SLACK = 0.01


@dataclass(frozen=True)
class WorkloadShape:
    """The work a benchmark reports it did (``vllm bench throughput`` prints the token
    totals; its JSON has the request count). None where it does not say."""

    num_prompts: int | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    #: The random dataset's own warning: prompts re-tokenised to this many more (+) or
    #: fewer (-) tokens than asked, in all.
    stated_mismatch: int = 0

    def describe(self) -> str:
        parts = []
        if self.num_prompts is not None:
            parts.append(f"{self.num_prompts:,} prompts")
        if self.prompt_tokens is not None:
            parts.append(f"{self.prompt_tokens:,} prompt tokens")
        if self.output_tokens is not None:
            parts.append(f"{self.output_tokens:,} output tokens")
        return ", ".join(parts) or "not reported"

    def comparable(self) -> tuple[int | None, int | None, int | None]:
        return (self.num_prompts, self.prompt_tokens, self.output_tokens)


@dataclass(frozen=True)
class ShapeAsked:
    """What the recipe asked: per-prompt lengths and the prompt count; ``range_ratio`` is
    the random dataset's ``--random-range-ratio`` (0: every prompt exactly that long),
    ``output_ratio`` its output part where vLLM was given one apart (None: the same)."""

    num_prompts: int | None = None
    input_len: int | None = None
    output_len: int | None = None
    range_ratio: float = 0.0
    output_ratio: float | None = None


def shape_problem(asked: ShapeAsked, got: WorkloadShape) -> str | None:
    """Why ``got`` is not the shape ``asked`` (None: it is, or nothing can be compared)."""
    problems = []
    n = got.num_prompts if got.num_prompts is not None else asked.num_prompts
    if (
        asked.num_prompts is not None
        and got.num_prompts is not None
        and got.num_prompts != asked.num_prompts
    ):
        problems.append(f"{got.num_prompts:,} prompts where {asked.num_prompts:,} were asked")
    if n:
        out_ratio = asked.range_ratio if asked.output_ratio is None else asked.output_ratio
        for what, per, total, stated, ratio in (
            ("prompt", asked.input_len, got.prompt_tokens, got.stated_mismatch, asked.range_ratio),
            ("output", asked.output_len, got.output_tokens, 0, out_ratio),
        ):
            if per is None or total is None:
                continue
            lo, hi = _bounds(n, per, ratio, stated)
            if not lo <= total <= hi:
                problems.append(
                    f"{total:,} {what} tokens ({total / n:,.0f} per prompt) where "
                    f"{per:,} per prompt were asked ({_range(lo, hi)} in all)"
                )
    if not problems:
        return None
    return "the workload did not take the shape the recipe asked: " + "; ".join(problems)


def _bounds(n: int, per: int, ratio: float, stated: int) -> tuple[int, int]:
    lo = n * math.floor(per * (1 - ratio)) - max(0, -stated)
    hi = n * math.ceil(per * (1 + ratio)) + max(0, stated)
    slack = max(n, math.ceil(SLACK * n * per))
    return max(0, lo - slack), hi + slack


def _range(lo: int, hi: int) -> str:
    return f"{lo:,}–{hi:,}"
