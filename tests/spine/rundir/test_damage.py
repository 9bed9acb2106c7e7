"""The run directory under damage and pressure: unreadable journal lines and results are
skipped with a warning, an unwritable place or a full disk stops the run with what
finished intact and a resume hint, and no path case ends in a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.recipes import write_recipe
from vllmdiag.cli.app import app

RUNNER = CliRunner()


def recipe(tmp_path: Path, workloads: str, name: str = "recipe.yaml") -> Path:
    body = "baseline: {leg: here}\nworkloads:\n" + textwrap.indent(textwrap.dedent(workloads), "  ")
    return write_recipe(tmp_path, body, question="what does it show?", file=name)


def matrix(*args: str) -> tuple[int, str, str]:
    result = RUNNER.invoke(app, ["matrix", *args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr


def events(run: Path) -> list[tuple[str, str | None]]:
    out = []
    for line in (run / "run.jsonl").read_bytes().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append((ev["event"], ev.get("id")))
    return out


TWO = """\
w1: {command: ["{python}", "-c", "print('one')"]}
w2: {command: ["{python}", "-c", "print('two')"]}
"""


def test_damaged_journal_lines_and_results_are_skipped_with_a_warning(tmp_path: Path) -> None:
    path = recipe(tmp_path, TWO)
    run = tmp_path / "run"
    assert matrix(str(path), "--out", str(run))[0] == 0
    with open(run / "run.jsonl", "ab") as fh:
        fh.write(b"[]\n42\n\xff\xfe not utf-8\n" + b'{"torn": ')
    (run / "cells/r1.baseline.w1/result.json").write_text("[]\n")
    (run / "cells/r1.baseline.w3").mkdir()
    (run / "cells/r1.baseline.w3/result.json").symlink_to("/dev/zero")  # never read
    w2 = run / "cells/r1.baseline.w2/result.json"
    w2.write_text(w2.read_text().replace('"r1.baseline.w2"', '"r1.baseline.w1"'))

    rc, out, err = matrix(str(path), "--resume", str(run), "--json")
    assert rc == 0, err
    assert [c["outcome"] for c in json.loads(out)["cells"]] == ["pass", "pass"]
    assert "a JSON list, not an event; skipped" in err and "a JSON int" in err
    assert "not UTF-8; line skipped" in err and "torn by a crash" in err
    assert "r1.baseline.w1/result.json: a JSON list, not a result" in err
    assert "holds cell 'r1.baseline.w1', not 'r1.baseline.w2'" in err
    assert "w3/result.json: a symlink in the run directory; ignored" in err
    started = [i for e, i in events(run) if e == "cell_started"]
    assert started == ["r1.baseline.w1", "r1.baseline.w2"] * 2  # both ran again
    assert json.loads(w2.read_text())["id"] == "r1.baseline.w2"


def test_out_or_runs_root_on_a_file_is_a_clean_error(tmp_path: Path) -> None:
    path = recipe(tmp_path, TWO)
    a_file = tmp_path / "taken"
    a_file.write_text("")
    rc, out, err = matrix(str(path), "--out", str(a_file), "--json")
    assert rc == 1 and "the run directory is an existing file" in err
    assert json.loads(out)["where"] == str(a_file)
    rc, _, err = matrix(str(path), "--runs-root", str(a_file))
    assert rc == 1 and "a file is in the way" in err and "--runs-root" in err
    rc, _, err = matrix(str(path), "--out", str(a_file / "sub"))
    assert rc == 1 and "a file is in the way" in err


def test_a_cache_that_is_a_file_is_a_clean_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = recipe(tmp_path, TWO)
    (tmp_path / "cache").write_text("")
    monkeypatch.setenv("VLLMDIAG_CACHE", str(tmp_path / "cache"))
    rc, _, err = matrix(str(path), "--dry-run")
    assert rc == 1 and "the cache location is a file, not a directory" in err
    assert "VLLMDIAG_CACHE" in err


def test_resume_of_something_that_is_not_a_run(tmp_path: Path) -> None:
    path = recipe(tmp_path, TWO)
    (tmp_path / "fake").mkdir()
    os.mkfifo(tmp_path / "fake/run.jsonl")  # must not block
    rc, _, err = matrix(str(path), "--resume", str(tmp_path / "fake"))
    assert rc == 1 and "not a vllmdiag run directory" in err


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real, small filesystem: a tmpfs of 4 MiB, mounted for the test."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_read_only_run_directory_is_a_clean_error(tmp_path: Path, tmpfs: Path) -> None:
    path = recipe(tmp_path, TWO)
    run = tmpfs / "run"
    assert matrix(str(path), "--out", str(run))[0] == 0
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    rc, out, err = matrix(str(path), "--resume", str(run), "--json")
    assert rc == 1 and "the run directory is read-only" in err
    assert json.loads(out)["error"].startswith("the run directory is read-only")
    rc, _, err = matrix(str(path), "--out", str(tmpfs / "new"))
    assert rc == 1 and "read-only" in err and "--out or --runs-root" in err


FILL = """\
w1: {command: ["{python}", "-c", "print('one')"]}
w2: {command: ["{python}", "{recipe_dir}/fill.py", "{out_dir}", "{recipe_dir}/room"]}
w3: {command: ["{python}", "-c", "print('three')"]}
"""

FILLER = """\
import os, sys
if not os.path.exists(sys.argv[2]):
    with open(os.path.join(sys.argv[1], "filler"), "wb") as fh:
        while True:
            fh.write(b"x" * 65536)  # until ENOSPC: then this cell fails
print("fits")
"""


def test_a_full_disk_stops_the_run_with_what_finished_intact(tmp_path: Path, tmpfs: Path) -> None:
    path = recipe(tmp_path, FILL)
    (tmp_path / "fill.py").write_text(FILLER)
    run = tmpfs / "run"
    rc, out, err = matrix(str(path), "--out", str(run), "--json")
    assert rc == 1, err
    assert "the disk is full" in err and f"--resume {run}" in err
    assert f"vllmdiag matrix {path}" in json.loads(out)["hint"]
    assert json.loads((run / "cells/r1.baseline.w1/result.json").read_text())["outcome"] == "pass"
    assert not (run / "cells/r1.baseline.w2/result.json").exists()  # never a "fail"

    (run / "cells/r1.baseline.w2/out/filler").unlink()
    (tmp_path / "room").write_text("")
    rc, out, err = matrix(str(path), "--resume", str(run), "--json")
    assert rc == 0, err
    assert [c["outcome"] for c in json.loads(out)["cells"]] == ["pass"] * 3
    assert ("cell_reused", "r1.baseline.w1") in events(run)


SWAP = """\
import os, shutil, sys
run = sys.argv[1]
shutil.copy(os.path.join(run, "run.jsonl"), os.path.join(run, "saved.jsonl"))
os.remove(os.path.join(run, "run.jsonl"))
os.symlink("/dev/full", os.path.join(run, "run.jsonl"))  # every write: ENOSPC
"""


def test_enospc_from_a_real_device_stops_the_run_cleanly(tmp_path: Path) -> None:
    """The same code path on any machine: /dev/full answers every write with ENOSPC."""
    run = tmp_path / "run"
    path = recipe(
        tmp_path,
        f"""\
        w1: {{command: ["{{python}}", "-c", "print('one')"]}}
        w2: {{command: ["{{python}}", "{{recipe_dir}}/swap.py", "{run}"]}}
        w3: {{command: ["{{python}}", "-c", "print('three')"]}}
        """,
    )
    (tmp_path / "swap.py").write_text(SWAP)
    rc, out, err = matrix(str(path), "--out", str(run), "--json")
    assert rc == 1 and "the disk is full: cannot append to the run journal" in err
    assert json.loads(out)["where"] == str(run / "run.jsonl")
    os.replace(run / "saved.jsonl", run / "run.jsonl")
    (tmp_path / "swap.py").write_text("print('no more')\n")
    rc, out, err = matrix(str(path), "--resume", str(run), "--json")
    assert rc == 0, err
    assert [c["outcome"] for c in json.loads(out)["cells"]] == ["pass"] * 3
    assert ("cell_reused", "r1.baseline.w1") in events(run)
