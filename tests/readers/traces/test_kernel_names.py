"""Kernel-name normalisation, families and step annotations (pure)."""

from __future__ import annotations

import pytest

from vllmdiag.readers.traces import families, phases

# Real kernel names: torch 2.11 on H200 (tests/fixtures/traces/h200), vLLM/NCCL/FlashInfer
# kernels as their traces print them.
NAMES = {
    "void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, "
    "unsigned int, 2, 2, -2>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
    "int, int, unsigned int, long)": (
        families.OTHER,
        "at::native::{anon}::indexSelectSmallIndex",
    ),
    "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT": (families.GEMM, "nvjet_sm90_tst_T_T_T_v_bz_TNT"),
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_"
    "align2>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align2::Params)": (
        families.GEMM,
        "cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_T_T_tn_align2>",
    ),
    "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 9,"
    " false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, "
    "bool)": (families.NORM_ACT, "{anon}::softmax_warp_forward"),
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)": (
        families.COMM,
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
    ),
    "void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int, 0>(float const*, bool const*,"
    " float*, int, int*, int*, int, int, int, bool)": (
        families.MOE,
        "vllm::moe::topkGatingSoftmax",
    ),
    "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>, true>"
    "(Flash_fwd_params)": (families.ATTENTION, "flash::flash_fwd_splitkv_kernel"),
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>(long const*)": (
        families.ATTENTION,
        "vllm::reshape_and_cache_flash_kernel",
    ),
    "triton_poi_fused_add_mul_rms_norm_0": (families.NORM_ACT, "triton_poi_fused_add_mul_rms_norm"),
    "memcpy32_post": (families.MEMORY, "memcpy32_post"),
    "Memcpy DtoD (Device -> Device)": (families.MEMORY, "Memcpy DtoD"),
}


@pytest.mark.parametrize("raw", list(NAMES))
def test_family_and_normalised_name(raw: str) -> None:
    fam, norm = NAMES[raw]
    assert families.family(raw) == fam
    assert families.normalise(raw) == norm


def test_memory_categories_are_memory_whatever_the_name() -> None:
    assert families.family("Memset (Device)", "gpu_memset") == families.MEMORY
    assert families.family("anything", "gpu_memcpy") == families.MEMORY


def test_rebuilt_kernels_match_across_legs() -> None:
    # different tile shapes and Triton suffixes of the same work normalise alike
    a = families.key("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas")
    b = families.key("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x256x64_cublas")
    assert a == b
    assert families.key("triton_red_fused_sum_3") == families.key("triton_red_fused_sum_12")
    # a different dtype is different work
    assert families.normalise("fp8_gemm_kernel_e4m3") != families.normalise("fp8_gemm_kernel")


@pytest.mark.parametrize(
    ("name", "kind", "out_tokens"),
    [
        ("execute_context_0(0)_generation_64(64)", phases.DECODE, 64),
        ("execute_context_2(8192)_generation_30(30)", phases.PREFILL, 30),
        ("execute_context_1(12)_generation_200(200)", phases.MIXED, 200),
        ("execute_new_0_cached_128", phases.DECODE, None),
        ("execute_new_16_cached_0", phases.PREFILL, None),
        ("execute_new_2_cached_100", phases.MIXED, None),
        ("vllmdiag:step#12", phases.STEP, None),
        ("ProfilerStep#3", phases.STEP, None),
    ],
)
def test_step_spellings(name: str, kind: str, out_tokens: int | None) -> None:
    step = phases.parse_step(name)
    assert step is not None
    assert step.kind == kind
    assert step.output_tokens == out_tokens


@pytest.mark.parametrize(
    "name", ["execute_model", "vllmdiag:measured", "aten::mm", "execute_new_x_cached_1", ""]
)
def test_other_ranges_are_not_steps(name: str) -> None:
    assert phases.parse_step(name) is None
