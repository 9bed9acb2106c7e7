"""Bad recipe and arm files, each a clean one-line error with its place, never a
traceback, a hang or a run that reads memory until the OOM killer comes."""

from __future__ import annotations

import os
import shlex
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vllmdiag.cli.app import app
from vllmdiag.errors import ConfigError, VllmdiagError
from vllmdiag.model.arms import Flag
from vllmdiag.plan import cells as planmod
from vllmdiag.plan import find_cell
from vllmdiag.services.config import load_arm_library, load_recipe
from vllmdiag.services.config.source import MAX_BYTES

HEAD = f"""\
name: t
question: what does it show?
legs:
  here: {{path: {sys.executable}}}
baseline: {{leg: here}}
"""
WORKLOADS = """\
workloads:
  w: {command: ["{python}", "-c", "pass", "{flags}"]}
"""


def write(tmp_path: Path, text: str, name: str = "recipe.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_recipe(path)
    return info.value


def cli_error(*args: str) -> str:
    """The CLI's answer to a user mistake: exit 1, one error line, no traceback."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.output.startswith("error: ")
    return result.output


def test_a_recipe_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_bytes(HEAD.encode() + "question: caf\xe9\n".encode("latin-1"))
    err = error_of(path)
    assert err.where == f"{path}:6:14" and "not UTF-8" in err.message and "0xe9" in err.message
    assert "UTF-8" in (err.hint or "")
    cli_error("matrix", str(path), "--dry-run")


def test_an_arm_file_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_bytes(b"family: x\narms:\n  - name: a\n    hypothesis: \xff\n")
    with pytest.raises(ConfigError, match="not UTF-8") as info:
        load_arm_library(tmp_path)
    assert info.value.where == f"{tmp_path / 'x.yaml'}:4:17"


def test_billion_laughs_is_refused_not_expanded(tmp_path: Path) -> None:
    lines = ['lol0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 9):
        lines.append(f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    path = write(tmp_path, HEAD + WORKLOADS + "\n".join(lines) + "\n")
    err = error_of(path)
    assert "expands to more than 100,000 values" in err.message
    assert "aliases" in (err.hint or "")


@pytest.mark.parametrize(
    ("body", "line"),
    [("x: &a\n  - 1\n  - *a\n", 8), ("x: &a {b: *a}\n", 6)],
)
def test_a_recursive_alias_is_refused_where_it_is(tmp_path: Path, body: str, line: int) -> None:
    path = write(tmp_path, HEAD + body)
    err = error_of(path)
    assert "recursive alias" in err.message
    assert err.where is not None and err.where.startswith(f"{path}:{line}:")


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + "x: " + "[" * 50_000 + "]" * 50_000 + "\n")
    err = error_of(path)
    assert "nested more than 64 levels deep" in err.message
    assert err.where == f"{path}:6:67"


def test_dev_zero_a_directory_and_an_oversized_file_are_refused(tmp_path: Path) -> None:
    assert "a character device, not a regular file" in error_of(Path("/dev/zero")).message
    assert "a directory" in error_of(tmp_path).message
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:
        fh.truncate(MAX_BYTES + 1)  # sparse: costs no disk
    assert "larger than 16 MiB" in error_of(big).message
    out = cli_error("matrix", "/dev/zero", "--dry-run")
    assert "/dev/zero: the file is a character device" in out


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "recipe.yaml"
    os.mkfifo(fifo)
    found: list[BaseException] = []
    worker = threading.Thread(target=lambda: found.append(error_of(fifo)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    if worker.is_alive():  # unblock the reader so the test process can end
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO recipe blocked")
    assert "a FIFO (named pipe), not a regular file" in str(found[0])


def test_a_nul_character_is_refused_at_its_place(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + WORKLOADS + 'arms:\n  - {name: a, env: {X: "a\\0b"}}\n')
    err = error_of(path)
    assert "NUL" in err.message and err.where == f"{path}:9:24"


def test_env_names_with_equals_and_values_without_value_are_refused(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, HEAD + WORKLOADS + "arms:\n  - {name: a, env: {A=B: '1'}}\n"))
    assert "contains '='" in err.message
    err = error_of(write(tmp_path, HEAD + WORKLOADS + "arms:\n  - {name: a, env: {A: }}\n"))
    assert "without a value" in err.message


def test_unbalanced_quotes_and_binary_values_are_refused_at_load(tmp_path: Path) -> None:
    text = HEAD + 'workloads:\n  w: {command: "python -c \'oops"}\n'
    err = error_of(write(tmp_path, text))
    assert "cannot be split into words (No closing quotation)" in err.message
    assert err.where == f"{tmp_path / 'recipe.yaml'}:7:6"
    text = HEAD + WORKLOADS + "arms:\n  - {name: a, env: {X: !!binary aGVsbG8=}}\n"
    assert "not b'hello'" in error_of(write(tmp_path, text)).message


def test_two_flags_in_one_string_are_two_flags(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, HEAD + WORKLOADS + "arms:\n  - {name: a, flag: --x --y}\n"))
    assert "more than one flag" in err.message and "compound: true" in err.message
    assert Flag.parse("--seed -1").value == "-1"
    assert Flag.parse("--x=--y").value == "--y"
    ok = load_recipe(
        write(
            tmp_path,
            HEAD + WORKLOADS + "arms:\n  - {name: a, flag: [--x, --y], compound: true}\n",
        )
    )
    assert not ok.arms[0].single_variable and len(ok.arms[0].flag) == 2


@pytest.mark.parametrize("name", ["../../escape", "a/b", ".hidden", "x y"])
def test_workload_names_cannot_leave_the_run_directory(tmp_path: Path, name: str) -> None:
    text = HEAD + f'workloads:\n  "{name}": {{command: ["{{python}}", "-c", "pass"]}}\n'
    err = error_of(write(tmp_path, text))
    assert f"workload name {name!r} is not allowed" in err.message
    assert err.where == f"{tmp_path / 'recipe.yaml'}:7:3"


def test_model_ids_name_their_workloads_and_still_get_checked(tmp_path: Path) -> None:
    body = (
        'workload: {command: ["{python}", "-c", "pass", "{model}"]}\n'
        "models: [Qwen/Qwen2.5-7B, meta/Llama-3.1-8B]\n"
    )
    assert list(load_recipe(write(tmp_path, HEAD + body)).workloads) == [
        "Qwen2.5-7B",
        "Llama-3.1-8B",
    ]
    err = error_of(write(tmp_path, HEAD + body.replace("meta/Llama-3.1-8B", "other/Qwen2.5-7B")))
    assert "two models are both called 'Qwen2.5-7B'" in err.message


def test_cell_ids_that_would_collide_are_refused(tmp_path: Path) -> None:
    text = HEAD + textwrap.dedent("""\
        workloads:
          w.v: {command: ["{python}", "-c", "pass"]}
          v: {command: ["{python}", "-c", "pass"]}
        arms:
          - {name: a, env: {X: "1"}}
          - {name: a.w, env: {X: "2"}}
        """)
    err = error_of(write(tmp_path, text))
    assert "would share the cell id r1.a.w.v" in err.message
    cli_error("matrix", str(tmp_path / "recipe.yaml"), "--dry-run")


def test_a_short_cell_name_that_fits_two_cells_is_refused(tmp_path: Path) -> None:
    text = HEAD + textwrap.dedent("""\
        workloads:
          x.y: {command: ["{python}", "-c", "pass"]}
          y: {command: ["{python}", "-c", "pass"]}
        arms:
          - {name: x, env: {X: "1"}}
        """)
    cells = planmod.expand(load_recipe(write(tmp_path, text)))
    with pytest.raises(VllmdiagError, match="names more than one cell"):
        find_cell(cells, "x.y")
    assert find_cell(cells, "r1.x.y").arm == "x"


def test_a_megabyte_scalar_prints_whole_and_pasteable(tmp_path: Path) -> None:
    big = "x" * 1_000_000
    text = HEAD + textwrap.dedent(f"""\
        workloads:
          w: {{command: ["{{python}}", "-c", "print('a b')", "{big}"]}}
        """)
    result = CliRunner().invoke(app, ["matrix", str(write(tmp_path, text)), "--dry-run"])
    assert result.exit_code == 0, result.output[-2000:]
    command = next(ln for ln in result.output.splitlines() if ln.startswith("  $ "))
    assert command == "  $ " + shlex.join([sys.executable, "-c", "print('a b')", big])
    assert shlex.split(command[4 : -len(big)]) == [sys.executable, "-c", "print('a b')"]
