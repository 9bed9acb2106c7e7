"""Pure hygiene checks."""

from __future__ import annotations

from vllmdiag.readers.hygiene import checks


def test_gpu_processes() -> None:
    apps = checks.parse_compute_apps(
        "12345, /usr/bin/python3, 70123 MiB\n23456, [Not Found], 512 MiB\n\n"
    )
    assert apps == [(12345, "/usr/bin/python3", "70123 MiB"), (23456, "[Not Found]", "512 MiB")]
    found = checks.gpu_processes(apps, own_pids=(23456,))
    assert [f.severity for f in found] == ["contaminated"]
    assert "pid 12345 /usr/bin/python3 (70123 MiB)" in found[0].message
    assert checks.gpu_processes([], ())[0].severity == "ok"
    skipped = checks.gpu_processes(None, (), error="nvidia-smi not found: not checked")
    assert skipped[0].severity == "skipped" and "not found" in skipped[0].message


def test_flashinfer_missing_extras_warn() -> None:
    found = checks.flashinfer({"flashinfer": {"flashinfer-python": "0.6.6"}})
    assert {f.severity for f in found} == {"warning"}
    assert "flashinfer-jit-cache==0.6.6" in (found[0].hint or "")


def test_script_owned_by_vllm_is_fine() -> None:
    probe = {
        "vllm": "0.26.0",
        "vllm_script": {
            "path": "/v/bin/vllm",
            "exists": True,
            "owners": ["vllm"],
            "declared_by": ["vllm"],
        },
    }
    assert checks.console_script(probe)[0].severity == "ok"


def test_require_clean_stops_unless_overridden() -> None:
    import pytest

    from vllmdiag.errors import EnvError
    from vllmdiag.readers.hygiene import DoctorReport, Finding, require_clean

    dirty = DoctorReport("0.26", "/v", (Finding("contaminated", "plugin", "vllm-omni plugin"),))
    with pytest.raises(EnvError) as err:
        require_clean(dirty)
    assert "plugin: vllm-omni plugin" in str(err.value)
    require_clean(dirty, allow_contaminated=True)
    require_clean(DoctorReport("0.26", "/v", (Finding("warning", "x", "y"),)))
