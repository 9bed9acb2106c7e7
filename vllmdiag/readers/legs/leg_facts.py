"""What a leg's interpreter is, read without running a cell: its Python version and
where its ``vllm`` package lies (found, never imported), and how that vLLM's source
spells the random dataset's lengths. One short probe per (interpreter, PYTHONPATH)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from vllmdiag.services import proc

_PROBE = (
    "import importlib.util as u, platform; s = u.find_spec('vllm'); "
    "print(platform.python_version()); "
    "print((s.submodule_search_locations or [''])[0] if s else '')"
)


@dataclass(frozen=True)
class InterpreterFacts:
    """``version``: the interpreter's X.Y.Z; ``vllm_dir``: the package it would import
    (with the cell's ``PYTHONPATH``), or None."""

    version: str
    vllm_dir: Path | None


@lru_cache(maxsize=64)
def interpreter_facts(python: Path, pythonpath: str = "") -> InterpreterFacts | None:
    """The facts of ``python`` (None: it does not start)."""
    env = proc.clean_environ()
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = proc.run([str(python), "-c", _PROBE], env=env, capture=True, timeout=60)
    if done.interrupted:
        raise KeyboardInterrupt
    lines = done.stdout.splitlines() if done.ok else []
    if not lines:
        return None
    found = lines[1].strip() if len(lines) > 1 else ""
    return InterpreterFacts(lines[0].strip(), Path(found) if found else None)


def spells_random_lengths(vllm_dir: Path | None) -> bool:
    """Whether the vLLM at ``vllm_dir`` has ``--random-input-len`` (a leg without vLLM
    counts as current: it never runs a built-in anyway)."""
    if vllm_dir is None:
        return True
    bench = vllm_dir / "benchmarks"
    sources = [*bench.glob("datasets.py"), *bench.glob("datasets/*.py"), bench / "throughput.py"]
    for src in sources:
        try:
            if '"--random-input-len"' in src.read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            continue
    return False
