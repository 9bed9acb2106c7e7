"""Pure parts of window: candidate filtering, uv's annotations, Requires-Dist, verdicts."""

from __future__ import annotations

from packaging.version import Version

from vllmdiag.jobs.window import ProbeStatus
from vllmdiag.jobs.window.consumers import declared_specifier, parse_compile, requirements_on
from vllmdiag.jobs.window.declared_range import assess, conflicting
from vllmdiag.jobs.window.search import window_specifier
from vllmdiag.services.pkgindex import IndexFile, candidates
from vllmdiag.services.pkgindex.versions import parse_date

P, A, X = ProbeStatus.PRESENT, ProbeStatus.ABSENT, ProbeStatus.INSTALL_FAILED


def wheel(
    name: str, rp: str | None = ">=3.10", up: str = "2026-01-01T00:00:00Z", yanked: bool = False
) -> IndexFile:
    return IndexFile(name, f"https://files.example/{name}", rp, up, yanked, True)


FILES = [
    wheel("pkg-4.0.0-cp312-cp312-manylinux_2_28_x86_64.whl", rp=">=3.12"),
    wheel("pkg-4.2.0-cp311-cp311-manylinux_2_28_x86_64.whl"),
    wheel("pkg-4.2.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
    wheel("pkg-4.3.0-py3-none-any.whl", yanked=True),
    wheel("pkg-4.4.0.dev1-py3-none-any.whl"),
    wheel("pkg-4.4.0-py3-none-any.whl", up="2026-02-14T00:00:00.5Z"),
    wheel("pkg-4.6.0-py3-none-any.whl", up="2026-07-02T00:00:00Z"),
    IndexFile("pkg-0.0.0a0.tar.gz", "u", None, None, True, False),
]


def vs(found: list) -> list[str]:  # type: ignore[type-arg]
    return [str(c.version) for c in found]


def test_candidates_drop_yanked_python_mismatch_and_pre() -> None:
    assert vs(candidates(FILES, python="3.11")) == ["4.2.0", "4.4.0", "4.6.0"]
    assert vs(candidates(FILES, python="3.12")) == ["4.0.0", "4.2.0", "4.4.0", "4.6.0"]
    assert "4.4.0.dev1" in vs(candidates(FILES, python="3.11", pre=True))


def test_candidates_range_and_exclude_newer() -> None:
    from packaging.specifiers import SpecifierSet

    got = candidates(FILES, python="3.11", spec=SpecifierSet(">=4.2,<4.6"))
    assert vs(got) == ["4.2.0", "4.4.0"]
    old = candidates(FILES, python="3.11", exclude_newer=parse_date("2026-06-01"))
    assert vs(old) == ["4.2.0", "4.4.0"]


def test_window_specifier() -> None:
    assert window_specifier(Version("4.2.0"), Version("4.6.0")) == ">=4.2.0,<4.6.0"
    assert window_specifier(Version("22.0"), None) == ">=22.0"


COMPILE = """\
flashinfer-python==0.6.6
    # via vllm
nvidia-cutlass-dsl==4.8.1
    # via
    #   flashinfer-python
    #   quack-kernels
    #   vllm
torch==2.10.0
    # via
    #   -r /tmp/x/requirements.in
    #   vllm
vllm==0.18.0
    # via -r /tmp/x/requirements.in
"""


def test_parse_compile_pins_and_via() -> None:
    r = parse_compile(COMPILE)
    assert r.pins["nvidia-cutlass-dsl"] == "4.8.1" and r.pins["vllm"] == "0.18.0"
    assert r.via["nvidia-cutlass-dsl"] == ("flashinfer-python", "quack-kernels", "vllm")
    assert r.via["torch"] == ("vllm",) and r.via["vllm"] == ()


METADATA = """\
Metadata-Version: 2.4
Name: vllm
Version: 0.18.0
Requires-Dist: flashinfer-python==0.6.6
Requires-Dist: nvidia-cutlass-dsl>=4.4.0.dev1
Requires-Dist: nvidia_cutlass_dsl<9; python_version < "3.10"
Requires-Dist: nvidia-cutlass-dsl[cu13]; extra == "cu13"

Long description.
"""


def test_requirements_on_applies_markers_and_names() -> None:
    reqs = requirements_on(METADATA, "NVIDIA_Cutlass.DSL", "3.11")
    assert [str(r) for r in reqs] == ["nvidia-cutlass-dsl>=4.4.0.dev1"]
    assert declared_specifier(reqs) == ">=4.4.0.dev1"
    assert declared_specifier([]) is None
    assert len(requirements_on(METADATA, "nvidia-cutlass-dsl", "3.9")) == 2


ROWS = [
    (Version(v), s)
    for v, s in [
        ("4.2.0", P),
        ("4.3.4", P),
        ("4.4.0", P),
        ("4.5.3", P),
        ("4.6.0", A),
        ("4.7.1", A),
        ("4.8.1", A),
    ]
]


def test_assess_cutlass_shape() -> None:
    a = assess(
        consumer="vllm==0.18.0",
        package="nvidia-cutlass-dsl",
        symbol="m.T",
        declared=">=4.4.0.dev1",
        rows=ROWS,
        resolves_to="4.8.1",
    )
    assert a.admitted_with_symbol == ("4.4.0", "4.5.3")
    assert a.admitted_without_symbol == ("4.6.0", "4.7.1", "4.8.1")
    assert a.suggested_bound == "<4.6.0"
    assert a.suggested_specifier == ">=4.4.0.dev1,<4.6.0"
    assert "picks 4.8.1, which lacks it" in a.verdict and "<4.6.0" in a.verdict


def test_assess_consumer_that_cannot_work() -> None:
    a = assess(
        consumer="x==1", package="p", symbol="m.T", declared=">=4.6", rows=ROWS, resolves_to="4.8.1"
    )
    assert a.admitted_with_symbol == () and a.suggested_bound is None
    assert "cannot work under its own constraints" in a.verdict


def test_assess_needs_a_lower_bound_when_old_versions_lack_it() -> None:
    rows = [(Version(v), s) for v, s in [("1", A), ("2", P), ("3", P), ("4", X), ("5", A)]]
    a = assess(
        consumer="c==1", package="p", symbol="m.T", declared=">=1", rows=rows, resolves_to=None
    )
    assert a.suggested_bound == ">=2,<4"
    assert a.admitted_undecided == ("4",)


def test_assess_fine_consumer() -> None:
    a = assess(
        consumer="c==1",
        package="p",
        symbol="m.T",
        declared=">=4.2,<4.6",
        rows=ROWS,
        resolves_to="4.5.3",
    )
    assert a.admitted_without_symbol == () and "Nothing to fix" in a.verdict


def test_conflicting_constraints() -> None:
    got = conflicting(
        [("quack-kernels==0.6.5", ">=4.7"), ("flashinfer-python==0.6.6", ">=4.3.4")], ROWS
    )
    assert got == ["quack-kernels==0.6.5 requires >=4.7, which admits no version with it"]


def test_assess_mentions_the_resolve_as_of_a_date() -> None:
    a = assess(
        consumer="vllm==0.18.0",
        package="p",
        symbol="m.T",
        declared=">=4.4.0.dev1",
        rows=ROWS[:5],
        resolves_to="4.8.1",
        as_of=("2026-08-01", "4.6.0"),
    )
    assert "picks 4.8.1 (as of 2026-08-01: 4.6.0, which lacks it)" in a.verdict
