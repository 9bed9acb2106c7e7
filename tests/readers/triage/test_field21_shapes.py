"""Blame rules for what the twentieth held-out corpus (``fixtures/logs/field21/``, eight
logs, as many as the searches left allowed) showed: Ray's report of a node whose GPU is
partly held by other actors, and vLLM refusing automatic tool choice outside Harmony.
Each on a minimal excerpt of the real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause


@pytest.mark.parametrize(
    ("resources", "origin"),
    [
        # part of the GPU left: other actors hold the rest, not the machine's alone
        ("{'memory': 36000000000.0, 'GPU': 0.05, 'CPU': 8.0}", "unknown"),
        # no GPU at all on the node: still the machine's
        ("{'memory': 36000000000.0, 'CPU': 8.0}", "environment"),
    ],
)
def test_a_node_without_a_free_gpu_is_blamed_by_what_rays_accounting_shows(
    tmp_path: Path, resources: str, origin: str
) -> None:
    rc = cause(
        tmp_path,
        f"ValueError: Current node has no GPU available. current_node_resource={resources}.\n",
    )
    assert rc.origin == origin


def test_auto_tool_choice_outside_harmony_is_the_users_setting(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "NotImplementedError: Auto tool choice is not supported yet unless using Harmony\n",
    )
    assert rc.origin == "config"


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("kuberay_2354_current_node_no_gpu_fractional.log", "exception-line", "unknown"),
        (
            "vllm_25426_auto_tool_choice_not_supported_unless_harmony.log",
            "exception-line",
            "config",
        ),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field21", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
