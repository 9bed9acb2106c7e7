"""Kernel names: a normalised form to match across legs, and a family to sum by.

Two vLLM versions rarely launch kernels with byte-identical names: template arguments,
tile shapes and Triton's numeric suffixes change while the work stays the same. Kernels
are matched on :func:`normalise` (the callable's qualified name with template arguments,
parameters, tile shapes and numeric suffixes taken out) within a :func:`family`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from vllmdiag.readers.traces import cxxnames
from vllmdiag.readers.traces.cxxnames import NAMES_CACHED

GEMM = "GEMM"
ATTENTION = "attention"
MOE = "MoE"
NORM_ACT = "norm/activation"
COMM = "communication"
MEMORY = "memcpy/memset"
OTHER = "other"

#: Every family, in the order tables and pictures show them.
FAMILIES: tuple[str, ...] = (GEMM, ATTENTION, MOE, NORM_ACT, COMM, MEMORY, OTHER)

# Every branch starts with a literal (a word boundary or an anchor is a lookbehind after
# it, "rope(?<=\brope)" for "\brope"), so the regex engine skips to the places a branch
# can start: a trace can hold 200,000 distinct kernel names.
# Checked in this order: the first match wins. MoE and communication go before GEMM
# (grouped GEMMs of experts are MoE time; NCCL kernels are not GEMMs whatever their
# name holds), attention before norm/activation (softmax inside flash kernels).
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        MEMORY,
        re.compile(
            r"(?:memcpy|memset)(?<=^memcpy|^memset)|memcpy(?<=\bmemcpy)\d*_|gpu_mem(?:cpy|set)|"
            r"\[mem(?:cpy|set)\b(?<=^\[memcpy|^\[memset)"
        ),
    ),
    (
        COMM,
        re.compile(
            r"nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|all2all|"
            r"cross_device_reduce|custom_?ar\b|one_?shot|two_?shot|lamport|deep_?ep|pplx|"
            r"nvshmem|symm_mem|multimem"
        ),
    ),
    (
        MOE,
        re.compile(
            r"moe|expert|topk_?gating|topk_?softmax|grouped_?topk|m_grouped|"
            r"shuffle_rows|count_and_sort|align_block_size|fused_experts|"
            r"silu_and_mul_masked|per_token_group_quant.*expert"
        ),
    ),
    (
        ATTENTION,
        re.compile(
            r"attn|attention|flash|fmha|mha_|mla|paged|reshape_and_cache|kv_?cache|"
            r"batchprefill|batchdecode|prefillwith|decodewith|merge_attn|"
            r"sdpa|scaled_dot_product|xformers|cutlass_?fmha|rotary|rope(?<=\brope)|_rope|"
            r"lightning_attn|mamba|selective_scan|ssd_|causal_conv"
        ),
    ),
    (
        GEMM,
        re.compile(
            r"gemm|gemv|matmul|mm_(?<=\bmm_)|_mm\b|_mm_|bmm|cublas|cutlass|nvjet|xmma|wgmma|"
            r"s16816|h16816|i8816|s161616|hmma|tensorop|splitk|dot_?product|"
            r"scaled_mm|deep_?gemm|marlin|machete|triton_mm|linear|fp8_block"
        ),
    ),
    (
        NORM_ACT,
        re.compile(
            r"norm|silu|gelu|relu|swiglu|geglu|act_and_mul|activation|softmax|"
            r"sigmoid|tanh|swish|quick_gelu"
        ),
    ),
)

_TILE = re.compile(r"\d+x\d+(x\d+)*")
_NUM_SUFFIX = re.compile(r"(_\d+)+$")

#: Launch wrappers whose first template argument is the real kernel (CUTLASS).
_WRAPPERS = frozenset({"Kernel", "Kernel2", "device_kernel", "KernelWrapper"})


@lru_cache(maxsize=NAMES_CACHED)
def normalise(name: str) -> str:
    """The part of a kernel's name that survives a rebuild: the function's qualified
    name (:func:`cxxnames.function_name`, never a return type), tile shapes and
    numeric suffixes taken out.

    ``std::enable_if<...>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(...)``
    → ``vllm::fused_add_rms_norm_kernel``;
    ``sm90_xmma_gemm_..._tilesize128x128x64_...`` keeps its words, loses the tile;
    ``triton_poi_fused_add_mul_0`` → ``triton_poi_fused_add_mul``.
    """
    text = cxxnames.function_name(name)
    if text.rsplit("::", 1)[-1] in _WRAPPERS:
        args = cxxnames.template_args(name)
        if args:
            text = f"{text}<{normalise(args[0])}>"
    text = _TILE.sub("T", text)
    text = _NUM_SUFFIX.sub("", text)
    return text or name


@lru_cache(maxsize=NAMES_CACHED)
def family(name: str, category: str = "kernel") -> str:
    """The family of a GPU activity, from its Kineto category and its raw name."""
    if category in ("gpu_memcpy", "gpu_memset", "memcpy", "memset"):
        return MEMORY
    low = name.lower()
    for fam, pattern in _RULES:
        if pattern.search(low):
            return fam
    return OTHER


def key(name: str, category: str = "kernel") -> tuple[str, str]:
    """What two legs' kernels are matched on: (family, normalised name)."""
    return family(name, category), normalise(name)
