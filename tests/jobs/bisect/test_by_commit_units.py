"""The pure parts of bisect --by commit: the endpoint noise rule, PR numbers from
subjects, the wheel index template (checked against vLLM's own documentation, kept as
text in tests/fixtures/vllm-wheels), the CUDA variant for a driver."""

from __future__ import annotations

import re

import pytest

from tests.support.paths import FIXTURES
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.bisect.commit_info import pr_number
from vllmdiag.jobs.bisect.endpoints import endpoint_gap
from vllmdiag.jobs.bisect.search import StepVerdict, metric_verdict
from vllmdiag.jobs.bisect.wheel_template import (
    DEFAULT_TEMPLATES,
    check_template,
    fallback,
    render,
    variant_for_driver,
    variant_in,
)
from vllmdiag.services.pkgindex.html_index import page_url

DOCS = FIXTURES / "vllm-wheels"


def test_default_template_renders_the_urls_vllms_docs_give() -> None:
    text = (DOCS / "install-specific-revisions.md").read_text()
    sha = re.search(r"export VLLM_COMMIT=([0-9a-f]{40})", text)
    url = re.search(r"--extra-index-url (https://\S+)", text)
    assert sha and url and "add variant subdirectory here if needed" in text
    documented = url.group(1).replace("${VLLM_COMMIT}", sha.group(1))
    variants = set(re.findall(r"`(cu\d{3}|cpu)`", text))
    assert variants == {"cu129", "cu130", "cpu"}
    template = DEFAULT_TEMPLATES["vllm"]
    for variant in sorted(variants):
        assert render(template, sha.group(1), variant) == f"{documented}/{variant}"
    # A commit without the variant's subdirectory: the commit's root, the default variant.
    assert fallback(template, sha.group(1)) == documented


def test_default_template_follows_the_nightly_index_layout() -> None:
    text = (DOCS / "nightly-builds.md").read_text()
    tree = [line for line in text.splitlines() if "──" in line]
    where = [i for i, line in enumerate(tree) if line.split("── ")[1].split()[0] == "cu129/"]
    assert where, "the layout no longer has a cu129 subdirectory per commit"
    below = tree[where[0] + 1 : where[0] + 4]
    assert [line.split("── ")[1].split()[0] for line in below] == [
        "index.html",
        "vllm/",
        "index.html",
    ]
    assert tree[0].split("── ")[1].split()[0] == "{commit_hash}/"
    page = page_url(render(DEFAULT_TEMPLATES["vllm"], "{commit_hash}", "cu129"), "vllm")
    assert page == "https://wheels.vllm.ai/{commit_hash}/cu129/vllm/"  # + index.html by the CDN
    assert "`https://wheels.vllm.ai/{commit_hash}` for wheels built at a specific commit" in text
    assert (
        fallback(DEFAULT_TEMPLATES["vllm"], "{commit_hash}")
        == "https://wheels.vllm.ai/{commit_hash}"
    )


def test_templates_are_checked() -> None:
    assert check_template("file:///srv/{commit}") == {"commit"}
    for bad, said in (
        ("https://host/nightly", "no {commit}"),
        ("https://host/{commit}/{arch}", "unknown field {arch}"),
        ("host/{commit}", "not an http(s):// or file:// URL"),
        ("https://host/{commit", "not a URL template"),
    ):
        with pytest.raises(VllmdiagError, match=re.escape(said)):
            check_template(bad)
    with pytest.raises(VllmdiagError, match="needs a variant"):
        render("https://h/{commit}/{variant}", "abc", None)
    assert fallback("https://h/{variant}/{commit}", "abc") is None


def test_variant_for_the_driver_and_from_a_leg() -> None:
    assert variant_for_driver("580.65.06") == "cu130"
    assert variant_for_driver("575.51.03") == "cu129"
    assert variant_for_driver("535.104.05") == "cu129"
    assert variant_for_driver(None) == "cpu"
    with pytest.raises(VllmdiagError, match="older than any CUDA variant"):
        variant_for_driver("470.82.01")
    assert variant_in(["torch==2.9.0+cu130"]) == "cu130"
    assert variant_in(["https://download.pytorch.org/whl/cu129"]) == "cu129"
    assert variant_in(["vllm==0.26.0", "numpy"]) is None


def test_pr_number_is_read_from_a_squash_merged_subject() -> None:
    assert pr_number("[Perf] Faster decode (#21345)") == 21345
    assert pr_number('Revert "x (#1)" (#2)') == 2
    assert pr_number("Change without a PR") is None
    assert pr_number("(#12) at the start") is None


def test_endpoints_within_their_spread_are_refused() -> None:
    gap = endpoint_gap([100.0, 90.0, 110.0], [95.0, 80.0, 100.0])
    assert not gap.differs and gap.threshold is None
    assert "within their spread 40" in gap.reason and "good end 100 (100, 90, 110)" in gap.reason


def test_endpoints_under_the_floor_are_refused_even_when_quiet() -> None:
    gap = endpoint_gap([100.0, 100.1, 99.9], [97.0, 97.1, 96.9])
    assert not gap.differs and "under the 5% floor" in gap.reason


def test_endpoints_beyond_noise_give_the_midpoint_threshold() -> None:
    slower = endpoint_gap([40.0, 41.0, 40.5], [400.0, 402.0, 401.0])  # latency: lower is better
    assert slower.differs and slower.threshold is not None and slower.threshold > 1
    assert metric_verdict(40.5, slower.good, slower.threshold) is StepVerdict.GOOD
    assert metric_verdict(401.0, slower.good, slower.threshold) is StepVerdict.BAD
    fewer = endpoint_gap([1000.0, 990.0, 1010.0], [700.0, 710.0, 690.0])  # throughput
    assert fewer.differs and fewer.threshold == pytest.approx(0.85)
    assert metric_verdict(860.0, fewer.good, fewer.threshold) is StepVerdict.GOOD
    assert metric_verdict(840.0, fewer.good, fewer.threshold) is StepVerdict.BAD
