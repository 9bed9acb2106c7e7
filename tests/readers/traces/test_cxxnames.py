"""The function a demangled kernel name names: real names from H200 traces and vLLM
0.26, then adversarial ones (nested templates, expressions, operators, lambdas)."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.support.paths import FIXTURES
from vllmdiag.readers.traces import families
from vllmdiag.readers.traces.cxxnames import function_name, is_signature, template_args

TRACES = FIXTURES / "traces"


def _real_kernel_names() -> list[str]:
    names: set[str] = set()
    for trace in sorted(TRACES.rglob("*.json.gz")):
        with gzip.open(trace, "rt") as f:
            names.update(
                str(e["name"]) for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"
            )
    return sorted(names)


REAL = _real_kernel_names()


def test_the_fixtures_hold_signatures_worth_parsing() -> None:
    assert len(REAL) >= 30
    assert sum(n.startswith("void ") for n in REAL) >= 15


@pytest.mark.parametrize("raw", REAL)
def test_every_real_kernel_shortens_to_a_qualified_name(raw: str) -> None:
    name = function_name(raw)
    assert name and not is_signature(name), name
    assert not name.startswith(("void", "std::", "(", "<")), name
    assert "<" not in name and ">" not in name and " " not in name.replace("operator ", "")
    # the name is a substring of the signature, scope by scope (templates cut out)
    for scope in name.split("::"):
        assert scope.replace("{anon}", "(anonymous namespace)") in raw or scope.startswith("{")


# vLLM 0.26's kernels as Kineto printed them on an H200, and other real spellings.
VLLM = {
    "std::enable_if<(bool)(8>0)&&_typeConvert<c10::BFloat16>::exists, void>::type "
    "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8, true>(c10::BFloat16*, c10::BFloat16*,"
    " c10::BFloat16 const*, float, int, int)": "vllm::fused_add_rms_norm_kernel",
    "std::enable_if<(8)==(0)||!(_typeConvert<c10::BFloat16>::exists), void>::type "
    "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 0, false>(c10::BFloat16*, c10::BFloat16*,"
    " c10::BFloat16 const*, float, int, int)": "vllm::fused_add_rms_norm_kernel",
    "void vllm::rms_norm_kernel<c10::BFloat16, 8, 3>(c10::BFloat16*, c10::BFloat16 const*, "
    "long, long, c10::BFloat16 const*, float, int, int)": "vllm::rms_norm_kernel",
    "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::"
    "BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)": (
        "vllm::act_and_mul_kernel"
    ),
    "triton_per_fused_fused_add_rms_norm_3": "triton_per_fused_fused_add_rms_norm_3",
    "void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2,"
    " cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<"
    "176>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false"
    ">, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128> >, flash::VarlenDynamicPersist"
    "entTileScheduler<128, 176, 128, 128, false, true, true, true, true, true> > >(flash::"
    "FlashAttnFwdSm90<...>::Params)": "cutlass::device_kernel",
}


@pytest.mark.parametrize("raw", list(VLLM))
def test_vllm_kernels_are_named_by_their_function_not_their_return_type(raw: str) -> None:
    assert function_name(raw) == VLLM[raw]


def test_the_two_fused_add_rms_norm_instantiations_are_one_kernel_not_std_enable_if() -> None:
    a, b = list(VLLM)[:2]
    assert families.normalise(a) == families.normalise(b) == "vllm::fused_add_rms_norm_kernel"
    # and never merged with another kernel that has the same return type
    other = a.replace("fused_add_rms_norm_kernel", "poly_norm_kernel")
    assert families.normalise(other) == "vllm::poly_norm_kernel"


ADVERSARIAL = {
    # nested templates closing with >> and > >, comparisons inside expressions
    "void k<a::B<c::D<int>>, (3>>1), (2<1)>(int)": "k",
    "void ns::k<(unsigned)(8>=4), x::Y<z::W<1> > >(int, float)": "ns::k",
    # return types: pointers, templates, ::type, const
    "float* ns::make<float>(unsigned long)": "ns::make",
    "std::pair<int, float> const ns::Q<int>::get<2>(int) const": "ns::Q::get",
    "typename std::enable_if<true, int>::type ns::f<1>()": "ns::f",
    # a function returning a function pointer, and function pointers as parameters
    "void (*ns::pick(int))(float, double)": "ns::pick",
    "void ns::apply<void (*)(int)>(void (*)(int), int)": "ns::apply",
    # anonymous namespaces, lambdas, operator names
    "void (anonymous namespace)::softmax_warp_forward<float, 9>(float*, int)": (
        "{anon}::softmax_warp_forward"
    ),
    "at::native::f(at::Tensor&)::{lambda(int)#1}::operator()(int) const": (
        "at::native::f::{lambda#1}::operator()"
    ),
    "ns::Vec::operator<<(std::ostream&) const": "ns::Vec::operator<<",
    "bool ns::operator<(ns::A const&, ns::A const&)": "ns::operator<",
    "ns::Vec& ns::Vec::operator>>=(int)": "ns::Vec::operator>>=",
    "void* ns::Arena::operator new[](unsigned long)": "ns::Arena::operator new[]",
    "ns::Vec::operator bool() const": "ns::Vec::operator bool",
    "auto ns::Fn::operator()<int>(int) &&": "ns::Fn::operator()",
    # an arrow inside a template expression is no bracket
    "void k<decltype(a->b)>(int)": "k",
    # not C++ at all
    "Memcpy DtoD (Device -> Device)": "Memcpy DtoD",
    "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT": "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT",
    "123": "123",
    "my_operator_kernel<4>(int)": "my_operator_kernel",
    "unbalanced<int(float": "unbalanced",
}


@pytest.mark.parametrize("raw", list(ADVERSARIAL))
def test_adversarial_names(raw: str) -> None:
    assert function_name(raw) == ADVERSARIAL[raw]


def test_template_arguments_of_the_function_itself() -> None:
    raw = "std::enable_if<true, void>::type cutlass::Kernel2<Op<1, 2>>(Op<1, 2>::Params)"
    assert template_args(raw) == ["Op<1, 2>"]
    assert families.normalise(raw) == "cutlass::Kernel2<Op>"
    assert template_args("triton_poi_fused_add_0") == []
