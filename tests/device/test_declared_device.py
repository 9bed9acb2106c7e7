"""The two vLLM legs of the H200 host against what their releases declare: the 0.25.0
leg (``path: /tmp/v025``, installed beside 0.26.0 with the image's
``nvidia-cutlass-dsl`` 4.6.0 where vLLM 0.25.0 declares ``nvidia-cutlass-dsl[cu13]==4.5.2``)
is a warning of the doctor, and so in every matrix's manifest. No GPU work: the doctor
runs ``--no-gpu``. ``VLLMDIAG_VLLM025`` names the 0.25 leg (default ``/tmp/v025``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag.cli.app import app

V025 = Path(os.environ.get("VLLMDIAG_VLLM025", "/tmp/v025"))


def _findings(leg: Path) -> list[dict[str, str]]:
    res = CliRunner().invoke(app, ["doctor", str(leg), "--no-gpu", "--json"])
    assert res.exit_code in (0, 2), res.output
    found: list[dict[str, str]] = json.loads(res.stdout)["findings"]
    return [f for f in found if f["code"] == "declared-requirements"]


def test_the_025_leg_breaks_vllms_own_cutlass_pin() -> None:
    if not V025.exists():
        pytest.skip(f"no vLLM 0.25.0 leg at {V025}")
    found = _findings(V025)
    cutlass = [f for f in found if f["message"].startswith("nvidia-cutlass-dsl ")]
    assert len(cutlass) == 1, found
    assert cutlass[0]["severity"] == "warning"
    assert (
        "is installed where vllm 0.25.0 declares nvidia-cutlass-dsl[cu13]==4.5.2"
        in (cutlass[0]["message"])
    )


def test_the_026_leg_is_read_against_its_own_release(vllm_python: Path) -> None:
    found = _findings(vllm_python)
    assert found, "the declared-requirements check did not run"
    releases = ("vllm 0.26.0", "torch ", "flashinfer-python ")
    for f in found:
        assert f["severity"] == "ok" or any(f" {r}" in f["message"] for r in releases), f
