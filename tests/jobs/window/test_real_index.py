"""window against the real index and real uv envs, with a small package: packaging's
``packaging.version.LegacyVersion`` is gone from 22.0 on."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag.cli.app import app
from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.window import DecidedBy, ProbeStatus, WindowRequest, find_window
from vllmdiag.services.pkgindex import (
    check_python,
    metadata,
    project,
    requires_dist,
    wheel_metadata,
)

pytestmark = pytest.mark.network

SYMBOL = "packaging.version.LegacyVersion"


def test_window_finds_the_22_0_removal_with_both_sides_imported() -> None:
    req = WindowRequest("packaging", SYMBOL, versions=">=20.4,<23.1", no_cache=True, jobs=2)
    report = find_window(req)
    rows = {r.version: r for r in report.versions}
    assert (rows["21.3"].status, rows["21.3"].decided_by) == (ProbeStatus.PRESENT, DecidedBy.IMPORT)
    assert (rows["22.0"].status, rows["22.0"].decided_by) == (ProbeStatus.ABSENT, DecidedBy.IMPORT)
    assert "no attribute 'LegacyVersion'" in rows["22.0"].detail
    assert report.window == ">=20.4,<22.0"
    # Only the change is installed and imported; the wheels' source decides the rest.
    assert report.decided_by_import == ("21.3", "22.0") and report.probes_run == 2
    others = tuple(r.version for r in report.versions if r.version not in ("21.3", "22.0"))
    assert report.decided_statically == others
    assert all(r.static is not None and r.static.has is not None for r in report.versions)
    assert report.static_read.used and report.static_read.overruled_at == ()

    again = find_window(WindowRequest("packaging", SYMBOL, versions=">=20.4,<23.1"))
    assert again.probes_run == 0 and again.probes_stored == 2
    assert [(r.version, r.status, r.decided_by) for r in again.versions] == [
        (r.version, r.status, r.decided_by) for r in report.versions
    ]
    assert all(r.stored for r in again.versions)
    assert again.elapsed_s < 1.0


def test_without_the_static_read_the_search_imports_and_agrees() -> None:
    req = WindowRequest("packaging", SYMBOL, versions=">=20.4,<23.1", no_cache=True, static=False)
    report = find_window(req)
    assert report.window == ">=20.4,<22.0" and not report.static_read.used
    assert {"20.4", "21.3", "22.0", "23.0"} <= set(report.decided_by_import)
    assert report.decided_statically == () and report.inferred
    assert all(r.static is None for r in report.versions)


def test_module_missing_and_scan() -> None:
    report = find_window(
        WindowRequest(
            "packaging", "packaging.nosuchmodule.X", versions=">=23.1,<23.3", scan=True, jobs=2
        )
    )
    assert [r.status for r in report.versions] == [ProbeStatus.MODULE_MISSING] * 2
    assert all(r.probed for r in report.versions) and report.window is None


def test_install_failure_is_reported_not_counted_absent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # uv offline with an empty cache cannot install anything: a real resolver failure.
    shared_cache = os.environ["UV_CACHE_DIR"]
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path))
    req = WindowRequest("packaging", SYMBOL, versions=">=21.3,<22.1", no_cache=True)
    report = find_window(req)
    assert [r.status for r in report.versions] == [ProbeStatus.INSTALL_FAILED] * 2
    assert all(r.probed for r in report.versions) and report.window is None
    assert "install failed" in report.versions[0].detail
    # A failed install may be the network's fault: it is not stored, the next run retries.
    monkeypatch.delenv("UV_OFFLINE")
    monkeypatch.setenv("UV_CACHE_DIR", shared_cache)
    again = find_window(WindowRequest("packaging", SYMBOL, versions=">=21.3,<22.1"))
    assert [r.status for r in again.versions] == [ProbeStatus.PRESENT, ProbeStatus.ABSENT]


def test_exclude_newer_drops_later_uploads() -> None:
    report = find_window(
        WindowRequest(
            "packaging", SYMBOL, versions=">=21.0,<23", exclude_newer="2021-12-31", no_cache=True
        )
    )
    assert [r.version for r in report.versions] == ["21.0", "21.1", "21.2", "21.3"]
    assert report.window == ">=21.0"
    assert all(r.status is ProbeStatus.PRESENT for r in report.versions if r.probed)


def test_cli_json_with_a_consumer_is_one_object() -> None:
    result = CliRunner().invoke(
        app,
        [
            "window",
            "packaging",
            "--symbol",
            SYMBOL,
            "--versions",
            ">=21.3,<22.1",
            "--consumer",
            "build==0.10.0",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["window"] == ">=21.3,<22.0"
    assert [v["status"] for v in data["versions"]] == ["present", "absent"]
    assert all(v["probed"] for v in data["versions"])
    (c,) = data["consumers"]
    assert c["declared"] == ">=19.0"
    assert c["admitted_with_symbol"] == ["21.3"] and c["admitted_without_symbol"] == ["22.0"]
    assert c["resolves_to"]  # today's packaging, whatever it is
    assert {"package": "build", "version": "0.10.0", "requires": ">=19.0"} in c["constrained_by"]
    assert "<22.0" in c["verdict"] and "build==0.10.0 declares packaging>=19.0" in c["verdict"]
    assert set(data) >= {"package", "symbol", "versions", "window", "consumers", "elapsed_s"}


def test_metadata_by_range_request_matches_the_metadata_file() -> None:
    proj = project("packaging")
    whl = next(f for f in proj.files if f.filename == "packaging-22.0-py3-none-any.whl")
    via_zip = wheel_metadata(whl.url)
    assert "Name: packaging" in via_zip and "Version: 22.0" in via_zip
    assert requires_dist(via_zip) == requires_dist(metadata(whl))


def test_unknown_index_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_DEFAULT_INDEX", "http://127.0.0.1:9/simple")
    start = time.monotonic()
    with pytest.raises(VllmdiagError, match="cannot reach the index"):
        find_window(WindowRequest("packaging", SYMBOL))
    assert time.monotonic() - start < 30


def test_python_by_path_or_version() -> None:
    xy = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert check_python(sys.executable) == (xy, sys.executable)
    assert check_python(xy) == (xy, sys.executable)  # ours: no search needed
    with pytest.raises(VllmdiagError, match=r"no Python 3\.4"):
        check_python("3.4")
