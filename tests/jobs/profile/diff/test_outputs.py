"""``profile diff`` with outputs it cannot write and traces that are not one clean
document: each is a one-line error naming the path, or the right result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app

SDPA = FIXTURES / "traces" / "h200" / "sdpa" / "trace.json.gz"


def kernel(name: str, ts: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": 2.0, "pid": 0,
            "tid": 7, "args": {"device": 0, "correlation": 5}}  # fmt: skip


def trace(path: Path, names: list[str], tail: str = "") -> Path:
    events = ",\n".join(json.dumps(kernel(n, 10.0 + 5 * i)) for i, n in enumerate(names))
    path.write_text('{"traceEvents": [' + events + "]}" + tail)
    return path


def diff(*args: str) -> Any:
    result = CliRunner().invoke(app, ["profile", "diff", *args])
    assert "Traceback" not in result.output
    return result


@pytest.mark.parametrize(
    ("out", "said"),
    [
        ("FILE", "the output directory is an existing file"),
        ("/dev/null", "the output directory is a device"),
        ("/proc/vllmdiag-x", "cannot make the output directory"),
        ("/proc", "the output directory cannot be written"),
        ("/sys/vllmdiag-x", "cannot make the output directory"),
    ],
)
def test_an_out_that_cannot_hold_the_diff_is_an_error(tmp_path: Path, out: str, said: str) -> None:
    a = trace(tmp_path / "a.json", ["gemm_a"])
    b = trace(tmp_path / "b.json", ["gemm_b"])
    if out == "FILE":
        out = str(tmp_path / "afile")
        Path(out).write_text("x")
    result = diff(str(a), str(b), "--out", out)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: ") and said in result.output, result.output


def test_a_runs_root_that_cannot_hold_a_run_is_an_error(tmp_path: Path) -> None:
    a = trace(tmp_path / "a.json", ["gemm_a"])
    (tmp_path / "afile").write_text("x")
    for root, said in ((tmp_path / "afile", "is an existing file"), (Path("/proc/x"), "cannot")):
        result = diff(str(a), str(a), "--runs-root", str(root))
        assert result.exit_code == 1 and said in result.output, result.output
        assert "--runs-root" in result.output


def test_a_lone_surrogate_in_a_kernel_name_is_written_escaped(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    bad = json.dumps(kernel("bad-name", 20.0)).replace("bad-name", "bad\\udc80name")
    a.write_text('{"traceEvents": [' + json.dumps(kernel("gemm_a", 10.0)) + ", " + bad + "]}")
    b = trace(tmp_path / "b.json", ["gemm_a"])
    out = tmp_path / "d"
    result = diff(str(a), str(b), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "bad\\udc80name" in (out / "summary.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("tail", "said"),
    [
        (' {"traceEvents": []}', "more after the trace's closing brace"),
        ("garbage", "more after the trace's closing brace"),
        ("\n\n  \n", None),  # whitespace after the document is fine
    ],
)
def test_a_second_document_or_trailing_garbage_is_refused(
    tmp_path: Path, tail: str, said: str | None
) -> None:
    a = trace(tmp_path / "a.json", ["gemm_a"], tail)
    b = trace(tmp_path / "b.json", ["gemm_a"])
    result = diff(str(a), str(b), "--out", str(tmp_path / "d"))
    if said is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 1, result.output
        assert f"error: {a}:1:" in result.output and said in result.output


def test_a_number_of_5000_digits_is_named_not_called_truncated(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    big = '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1' + "0" * 5000 + ', "dur": 1}'
    a.write_text('{"traceEvents": [' + json.dumps(kernel("gemm_a", 10.0)) + ", " + big + "]}")
    result = diff(str(a), str(SDPA), "--out", str(tmp_path / "d"))
    assert result.exit_code == 1, result.output
    assert "a value JSON cannot hold here" in result.output
    assert "ends inside a value" not in result.output and "truncated" not in result.output


def test_only_a_traces_own_pyspy_files_are_read_beside_it(tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    a = trace(folder / "a.json", ["gemm_a"])
    b = trace(folder / "b.json", ["gemm_a"])
    (folder / "unrelated.folded").write_bytes(b"\xff\xfe not a profile at all \x00\n")
    result = diff(str(a), str(b), "--out", str(tmp_path / "d"), "--json")
    assert result.exit_code == 0, result.output
    assert not json.loads(result.stdout).get("pyspy")  # no py-spy side was taken
    (folder / "a.folded").write_text("main;step;matmul 30\nmain;step;softmax 10\n")
    (folder / "b.folded").write_text("main;step;matmul 10\nmain;step;softmax 30\n")
    result = diff(str(a), str(b), "--out", str(tmp_path / "d2"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout).get("pyspy"), result.stdout
