"""Logs as captures leave them: UTF-16 from PowerShell, bare-CR line ends, an ANSI
escape around every character, a gzip copy cut short. Each is read to the same root
cause as the clean log, through the real CLI, and the note says how it was read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES
from vllmdiag.cli.app import app
from vllmdiag.readers.triage.logbytes import utf16_kind

LOG = FIXTURES / "logs" / "b200_018_whisper_thrmma.log"
CAUSE = "AttributeError: module 'cutlass.cute.core' has no attribute 'ThrMma'"


def triage_json(path: Path) -> dict[str, object]:
    result = CliRunner().invoke(app, ["triage", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def signature(data: dict[str, object]) -> object:
    cause = data.get("root_cause")
    return cause.get("signature") if isinstance(cause, dict) else None


def each_char_coloured(raw: bytes) -> bytes:
    return b"".join(b"\x1b[3%dm%c\x1b[0m" % (i % 7 + 1, c) for i, c in enumerate(raw))


CAPTURES = {
    "utf16-bom": (lambda raw: raw.decode().encode("utf-16"), "read as UTF-16 text"),
    "utf16le-no-bom": (lambda raw: raw.decode().encode("utf-16-le"), "read as UTF-16-LE text"),
    "utf16be-no-bom": (lambda raw: raw.decode().encode("utf-16-be"), "read as UTF-16-BE text"),
    "utf16-crlf": (
        lambda raw: raw.replace(b"\n", b"\r\n").decode().encode("utf-16"),
        "read as UTF-16 text",
    ),
    "cr-only": (lambda raw: raw.replace(b"\n", b"\r"), "lines end in a bare CR"),
    "ansi-per-char": (each_char_coloured, "ANSI escape sequences between the characters dropped"),
}


@pytest.mark.parametrize("name", sorted(CAPTURES))
@pytest.mark.parametrize("gz", [False, True])
def test_a_mangled_capture_reads_to_the_same_root_cause(
    tmp_path: Path, name: str, gz: bool
) -> None:
    raw = LOG.read_bytes()
    assert signature(triage_json(LOG)) == CAUSE  # the clean log, for reference
    mangle, note = CAPTURES[name]
    data = mangle(raw)
    path = tmp_path / (f"{name}.log.gz" if gz else f"{name}.log")
    path.write_bytes(gzip.compress(data) if gz else data)
    got = triage_json(path)
    assert signature(got) == CAUSE, got
    assert note in str(got.get("note")), got


def test_an_escape_split_across_blocks_is_still_dropped(tmp_path: Path) -> None:
    from vllmdiag.readers.triage import reader

    raw = LOG.read_bytes()
    pad = b"x" * (reader.BLOCK - 3) + b"\n"  # the first block ends inside "\x1b[31m"
    path = tmp_path / "split.log"
    path.write_bytes(pad + each_char_coloured(raw))
    assert signature(triage_json(path)) == CAUSE


def test_a_truncated_gzip_is_read_as_far_as_it_goes_with_a_note(tmp_path: Path) -> None:
    raw = LOG.read_bytes() * 50
    whole = gzip.compress(raw)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    got = triage_json(path)
    assert signature(got) == CAUSE
    assert "the gzip stream ends early" in str(got["note"])
    path.write_bytes(whole)  # the whole file: no such note
    assert "gzip" not in str(triage_json(path).get("note"))


def test_text_that_only_has_nuls_somewhere_is_not_utf16() -> None:
    assert utf16_kind(b"hello world\n" * 100) is None
    assert utf16_kind(b"\x00" * 5000) is None  # binary zeros, not text
    assert utf16_kind("hello".encode("utf-16-le") * 50) == "utf-16-le"
    assert utf16_kind("hello".encode("utf-16-be") * 50) == "utf-16-be"


def test_the_triage_text_output_names_how_the_log_was_read(tmp_path: Path) -> None:
    path = tmp_path / "ps.log"
    path.write_bytes(LOG.read_bytes().decode().encode("utf-16"))
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 0, result.output
    assert "ThrMma" in result.output and "read as UTF-16 text" in result.output


def test_dense_noise_inside_an_ordinary_coloured_log_is_found(tmp_path: Path) -> None:
    line = b"\x1b[32mINFO\x1b[0m 09-21 12:34:56 [core.py:123] step running 8 reqs\n"
    path = tmp_path / "mixed.log"
    path.write_bytes(line * 30_000 + each_char_coloured(LOG.read_bytes()) + line * 100)
    assert signature(triage_json(path)) == CAUSE
