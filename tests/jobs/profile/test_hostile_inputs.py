"""Damaged and hostile inputs: one clean error naming the file, or refused events counted
and shown; outputs never inside the input tree; a typo is not a recipe."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app
from vllmdiag.readers.traces import jsonstream, kineto, leg, nsys
from vllmdiag.readers.traces.jsonstream import TraceFormatError

H200 = FIXTURES / "traces" / "h200"
SDPA = H200 / "sdpa" / "trace.json.gz"


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["profile", *args])


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"bare {name} in JSON output")

    return json.loads(text, parse_constant=refuse)


def _one_clean_line(output: str, path: Path, what: str) -> None:
    first = output.strip().splitlines()[0]
    assert first.startswith(f"error: {path}") and what in first, output
    assert "Traceback" not in output and "Aborted" not in output


def test_truncated_gzip_is_one_clean_line(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(SDPA.read_bytes()[: SDPA.stat().st_size // 2])
    with pytest.raises(TraceFormatError, match="unreadable compressed data"):
        kineto.read(cut)
    res = _cli("diff", str(cut), str(SDPA), "--out", str(tmp_path / "d"))
    assert res.exit_code == 1
    _one_clean_line(res.output, cut, "unreadable compressed data (Compressed file ended")


def test_bad_crc_and_corrupt_deflate(tmp_path: Path) -> None:
    raw = bytearray(SDPA.read_bytes())
    crc = tmp_path / "crc.json.gz"
    raw_crc = bytearray(raw)
    raw_crc[-8] ^= 0xFF  # the trailer's CRC32
    crc.write_bytes(bytes(raw_crc))
    with pytest.raises(TraceFormatError, match="CRC check failed"):
        kineto.read(crc)
    bad = tmp_path / "bad.json.gz"
    raw[len(raw) // 2 : len(raw) // 2 + 64] = b"\xff" * 64
    bad.write_bytes(bytes(raw))
    with pytest.raises(TraceFormatError) as err:
        kineto.read(bad)
    assert err.value.where == str(bad)


def test_malformed_json_points_at_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [\n{"ph": "X", "cat": "kernel"},\n{"ph": X}\n]}')
    with pytest.raises(TraceFormatError) as err:
        kineto.read(p)
    assert err.value.where == f"{p}:3:8"
    p.write_text('{"traceEvents": {"ph": "X"}}')
    with pytest.raises(TraceFormatError, match="traceEvents is not an array"):
        kineto.read(p)


def _kernel(name: object = "k", **over: object) -> dict[str, object]:
    args = {"device": 0, "correlation": 5}
    ev: dict[str, object] = {"ph": "X", "cat": "kernel", "name": name, "ts": 10.0, "dur": 2.0,
                             "pid": 0, "tid": 7, "args": args}  # fmt: skip
    ev.update(over)
    return ev


HOSTILE: list[tuple[str, object]] = [
    ("kernel: dur is not a number", _kernel(dur="abc")),
    ("kernel: dur is missing", _kernel(dur=None)),
    ("kernel: ts is missing", {k: v for k, v in _kernel().items() if k != "ts"}),
    ("kernel: args is not an object", _kernel(args=[1, 2])),
    ("kernel: device is not an integer",
     _kernel(args={"device": "cuda:0", "correlation": 5})),
    ("kernel: name is not a string", _kernel(name=1234)),
    ("kernel: dur is negative", _kernel(dur=-5)),
    ("kernel: correlation is not an integer", _kernel(args={"device": 0, "correlation": "x"})),
    ("cpu_op: dur is not a number", {"ph": "X", "cat": "cpu_op", "name": "aten::mm",
                                     "dur": "1"}),
    ("event is not an object", 17),
]  # fmt: skip


def _hostile_trace(path: Path, deep: int = 0) -> None:
    events = [json.dumps(_kernel(f"good_gemm_{i}", ts=10.0 + 5 * i)) for i in range(3)]
    events += [json.dumps(ev) for _, ev in HOSTILE]
    events += [json.dumps(_kernel(dur=x)) for x in (float("nan"), float("inf"))]  # bare NaN
    if deep:
        events.append('{"ph": "X", "cat": "kernel", "args": ' + "[" * deep + "]" * deep + "}")
    path.write_text('{"traceEvents": [' + ",\n".join(events) + "]}")


def test_hostile_events_are_refused_and_counted(tmp_path: Path) -> None:
    p = tmp_path / "hostile.json"
    _hostile_trace(p)
    s = kineto.read(p)
    assert s.kernel_count == 3  # only the three good kernels are folded in
    assert s.gpu_time_us == pytest.approx(6.0)
    for reason, _ in HOSTILE:
        assert s.skipped.get(reason) == 1, (reason, s.skipped)
    assert s.skipped["kernel: dur is not finite"] == 2


@pytest.mark.parametrize("chunk", [64, 1 << 22])
def test_an_event_nested_too_deep_is_stepped_over(
    tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonstream, "CHUNK_CHARS", chunk)
    p = tmp_path / "deep.json"
    _hostile_trace(p, deep=100_000)
    s = kineto.read(p)
    assert s.kernel_count == 3
    assert s.skipped["event nested too deeply to decode"] == 1


def test_cli_shows_refused_events_and_json_has_no_nan(tmp_path: Path) -> None:
    p = tmp_path / "hostile.json"
    _hostile_trace(p)
    res = _cli("diff", str(p), str(SDPA), "--out", str(tmp_path / "d"), "--json")
    assert res.exit_code == 0, res.output
    data = _strict(res.stdout)
    mine = data["legs"][0]
    assert mine["skipped_events"] == sum(mine["skipped"].values()) == len(HOSTILE) + 2
    assert any("trace events refused" in w for w in data["warnings"])
    summary = (tmp_path / "d" / "summary.md").read_text()
    assert "## Events refused in hostile" in summary and "device is not an integer" in summary
    _strict((tmp_path / "d" / "diff.json").read_text())


def test_nsys_rows_with_null_or_inverted_times(tmp_path: Path) -> None:
    p = tmp_path / "r.sqlite"
    db = sqlite3.connect(p)
    db.executescript(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId "
        "INTEGER, correlationId INTEGER, demangledName INTEGER);"
        "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT);"
        "INSERT INTO StringIds VALUES (0, 'void k<int>(int)');"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 3000, 0, 1, 0), "
        "(NULL, 3000, 0, 2, 0), (5000, NULL, 0, 3, 0), (9000, 8000, 0, 4, 0);"
        "INSERT INTO NVTX_EVENTS VALUES (500, NULL, 59, 'open range'), (500, 4000, 59, 'r');"
    )
    db.commit()
    db.close()
    s = nsys.read(p)
    assert s.kernel_count == 1 and s.gpu_time_us == pytest.approx(2.0)
    assert s.skipped["kernel: NULL start or end"] == 2
    assert s.skipped["kernel: start/end not finite numbers, or end before start"] == 1
    assert s.skipped["NVTX range: NULL start or end"] == 1


def test_meta_json_that_is_not_json(tmp_path: Path) -> None:
    cap = tmp_path / "eager"
    shutil.copytree(H200 / "eager", cap)
    (cap / "meta.json").write_text("{not json")
    lp = leg.load(cap)
    assert lp.meta == {} and lp.wall_source is leg.WallClock.TRACED_STEPS
    assert "meta.json:1:2: meta.json is not JSON" in lp.warnings[0]
    res = _cli("diff", str(cap), str(H200 / "graph"), "--out", str(tmp_path / "d"))
    assert res.exit_code == 0, res.output
    assert "meta.json is not JSON" in res.output


def test_diff_without_out_makes_a_new_run_directory(tmp_path: Path) -> None:
    a, b = tmp_path / "in" / "a", tmp_path / "in" / "b"
    shutil.copytree(H200 / "eager", a)
    shutil.copytree(H200 / "graph", b)
    before = sorted(p.name for p in (tmp_path / "in").iterdir())
    runs = tmp_path / "runs"
    for _ in range(2):
        assert _cli("diff", str(a), str(b), "--runs-root", str(runs)).exit_code == 0
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == before
    made = sorted(runs.iterdir())
    assert len(made) == 2 and all(p.name.startswith("profile-diff-") for p in made)
    assert all((p / "summary.md").exists() and (p / "diff.json").exists() for p in made)


def test_capture_into_an_existing_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "profile.json").write_text("{}")
    res = _cli("capture", "--leg", "a=/nope", "--leg", "b=/nope", "--command", "vllm x",
               "--out", str(tmp_path))  # fmt: skip
    assert res.exit_code == 1
    assert "already holds a profile run" in res.output


@pytest.mark.parametrize(("typo", "hint"), [("dif", "'diff'"), ("captur", "'capture'")])
def test_a_typo_of_a_subcommand_is_not_a_recipe(typo: str, hint: str) -> None:
    res = _cli(typo, "a", "b")
    assert res.exit_code == 2
    assert "neither a profile command" in res.output and f"did you mean {hint}" in res.output
    assert "Traceback" not in res.output


def test_a_shipped_recipe_name_is_a_recipe_not_a_typo() -> None:
    res = _cli("decode_regression_235b", "--legs", "v0.18")
    assert res.exit_code == 1 and "profile compares two different sides" in res.output


def test_every_profile_option_has_help() -> None:
    group = typer.main.get_command(app).commands["profile"]  # type: ignore[attr-defined]
    for name, cmd in group.commands.items():
        for param in cmd.params:
            if param.param_type_name == "option":
                assert getattr(param, "help", None), f"profile {name} {param.opts} has no help"


def test_garbled_profile_json_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "profile.json").write_text('{"schema": 1, "captures": [{"leg": "a"}]}')
    res = _cli("diff", str(tmp_path))
    assert res.exit_code == 1
    _one_clean_line(res.output, tmp_path / "profile.json", "profile.json does not read back")


def test_a_damaged_gzip_raises_what_the_reader_catches() -> None:
    """The stdlib's exceptions for the cases above, which the reader turns into errors."""
    with pytest.raises(EOFError):
        gzip.decompress(SDPA.read_bytes()[:1000])
    with pytest.raises(zlib.error):
        zlib.decompress(b"x\x9c\xff\xff\xff")


def test_a_run_directory_of_the_same_second_gets_the_next_suffix(tmp_path: Path) -> None:
    from datetime import datetime, timedelta, timezone

    from vllmdiag.jobs.profile.diff_command import fresh_dir

    now = datetime.now(timezone.utc)
    for t in (now, now + timedelta(seconds=1)):  # whichever second fresh_dir sees
        (tmp_path / f"profile-diff-{t.strftime('%Y%m%dT%H%M%SZ')}").mkdir()
    made = fresh_dir(tmp_path, "profile-diff")
    assert made.is_dir() and made.name.endswith("-2")
