"""The catalogue's next steps run, name arms that exist, and move the way the message says.

Every next step that works on this machine alone is run as a real command of the CLI
(``arms``, ``leg show``, ``doctor``, ``matrix --dry-run``), with the user's own names in
place of RECIPE, LEG and ARM; a ``window`` step (real installs of every release) is
parsed by the real CLI in ``test_triage_catalogue``. Every arm an entry names, in its
``arms``, its next step or its advice, resolves in the arm library. And where vLLM's
message says which way to turn a setting, the arm turns it that way: the real KV-starved
run on the H200 says "Try increasing gpu_memory_utilization", so its next step raises it.
"""

from __future__ import annotations

import re
import shlex
import sys

import pytest
from typer.testing import CliRunner

from tests.support.paths import FIXTURES, REPO
from vllmdiag.cli.app import app
from vllmdiag.readers.triage import Catalogue, triage_file
from vllmdiag.services.config.arms_lib import load_arm_library

ROOT = REPO
KV = FIXTURES / "vllm026" / "kv-starved"
#: vLLM's default --gpu-memory-utilization
DEFAULT_UTILIZATION = 0.9
VALUES = {"vllm_version": "0.18.0", "model_type": "gemma4", "arch": "Gemma4ForCausalLM"}
_ARM_WORDS = re.compile(r"\barms?\s+([\w.-]+(?:(?:,\s*|\s+(?:and|or)\s+)[\w.-]+)*)")


def _user(argv: list[str]) -> list[str]:
    """The user's own names for RECIPE, LEG and ARM (a leg alone is a venv's python)."""
    recipe = str(ROOT / "recipes" / "thrmma-cpu.yaml")
    with_recipe = "RECIPE" in argv
    out = []
    for a in argv:
        if a == "RECIPE":
            out.append(recipe)
        elif a == "LEG":
            out.append("fresh" if with_recipe else sys.executable)
        elif a == "ARM":
            out.append("enforce-eager")
        else:
            out.append(a)
    return out


def _entries() -> list[tuple[str, str]]:
    cat = Catalogue.load(use_env=False)
    return [(e.name, e.next_step.format_map(VALUES)) for e in cat.entries]


@pytest.mark.parametrize(
    ("name", "line"),
    [e for e in _entries() if not e[1].startswith("vllmdiag window ")],
    ids=[e[0] for e in _entries() if not e[1].startswith("vllmdiag window ")],
)
def test_every_local_next_step_runs_as_a_real_command(name: str, line: str) -> None:
    argv = _user(shlex.split(line)[1:])
    res = CliRunner().invoke(app, argv)
    # doctor exits 2 for a contaminated leg: a finding, not a failure of the command
    assert res.exit_code in ((0, 2) if argv[0] == "doctor" else (0,)), (name, line, res.output)
    assert res.output.strip(), (name, line)
    assert "Traceback" not in res.output and "error:" not in res.output.lower(), res.output


def _named_arms(text: str) -> set[str]:
    names = set()
    for m in _ARM_WORDS.finditer(text):
        for word in re.split(r",\s*|\s+(?:and|or)\s+", m[1]):
            word = word.rstrip(".")
            if word.endswith("-") or word in ("to", "that", "list", "show", "the"):
                continue
            if "-" in word:
                names.add(word)
    return names


def test_every_arm_the_catalogue_names_is_in_the_library() -> None:
    library = load_arm_library()
    cat = Catalogue.load(use_env=False)
    named = 0
    for e in cat.entries:
        arms = set(e.arms) | _named_arms(e.advice) | _named_arms(e.next_step)
        for arm in arms:
            library.get(arm, where=f"catalogue entry {e.name}")  # raises if it is not there
            named += 1
    assert named >= 12


def test_the_arm_word_reader_finds_what_advice_names() -> None:
    assert _named_arms("add the arms enforce-eager and attention-backend-triton, and") == {
        "enforce-eager",
        "attention-backend-triton",
    }
    assert _named_arms("then add the arm nvidia-cutlass-dsl-4.5.3 to the matrix") == {
        "nvidia-cutlass-dsl-4.5.3"
    }


def _utilization(arm: str) -> float:
    m = re.fullmatch(r"gpu-memory-utilization-(\d\.\d+)", arm)
    assert m, arm
    return float(m[1])


@pytest.mark.parametrize(
    ("entry", "message", "way"),
    [
        (
            "kv-cache-too-small",
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.",
            "up",
        ),
        (
            "kv-cache-too-small",
            "ValueError: To serve at least one request with the model's max seq len (8192), "
            "10.0 GiB KV cache is needed, which is larger than the available KV cache memory "
            "(5.2 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
            "when initializing the engine.",
            "up",
        ),
        (
            "free-memory-below-utilization",
            "ValueError: Free memory on device cuda:0 (20.1/139.8 GiB) on startup is less "
            "than desired GPU memory utilization (0.9, 125.8 GiB). Decrease GPU memory "
            "utilization or reduce GPU memory used by other processes.",
            "down",
        ),
        (
            "sampler-warmup-out-of-memory",
            "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy "
            "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
            "initializing the engine.",
            "down",
        ),
    ],
)
def test_the_arms_move_the_setting_the_way_the_message_says(
    entry: str, message: str, way: str
) -> None:
    cat = Catalogue.load(use_env=False)
    typ, _, rest = message.partition(": ")
    hit = cat.match(f"{typ}: {rest}", message)
    assert hit is not None and hit.name == entry
    utilization = [a for a in hit.entry.arms if a.startswith("gpu-memory-utilization-")]
    assert utilization, hit.entry.arms
    for arm in utilization:
        value = _utilization(arm)
        assert (value > DEFAULT_UTILIZATION) if way == "up" else (value < DEFAULT_UTILIZATION)
    steps = re.findall(r"gpu-memory-utilization-\d\.\d+", hit.next_step + " " + (hit.advice or ""))
    for arm in steps:
        value = _utilization(arm)
        assert (value > DEFAULT_UTILIZATION) if way == "up" else (value < DEFAULT_UTILIZATION)
    if "max_model_len" in message:
        assert "max-model-len-2048" in hit.entry.arms


def test_the_real_kv_starved_run_is_told_to_raise_the_share_or_shorten_the_context() -> None:
    rc = triage_file(KV / "cells" / "r1.baseline.llama" / "log.txt").root_cause
    assert rc is not None and rc.known == "kv-cache-too-small"
    assert "Try increasing `gpu_memory_utilization`" in rc.message
    assert rc.next_step == "vllmdiag arms show gpu-memory-utilization-0.95"
    assert rc.advice is not None and "max-model-len-2048" in rc.advice
    res = CliRunner().invoke(app, shlex.split(rc.next_step)[1:])
    assert res.exit_code == 0 and "--gpu-memory-utilization 0.95" in res.output
