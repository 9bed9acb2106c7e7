"""What a leg's own vLLM command line accepts, read from its installed source.

Importing vLLM costs tens of seconds; finding its package directory does not (the
interpreter locates it without running it), and the spelling of a benchmark flag is a
plain string in its source. So each leg is asked once, statically.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from vllmdiag import proc
from vllmdiag.plan.workloads import CURRENT, PLAIN_LENGTHS, BenchDialect

_FIND = (
    "import importlib.util as u; s = u.find_spec('vllm'); "
    "print((s.submodule_search_locations or [''])[0] if s else '')"
)


@lru_cache(maxsize=64)
def vllm_package_dir(python: Path, pythonpath: str = "") -> Path | None:
    """The ``vllm`` package directory the leg's interpreter would import (with the cell's
    ``PYTHONPATH``, if the recipe sets one), or None."""
    env = proc.clean_environ()
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = proc.run([str(python), "-c", _FIND], env=env, capture=True, timeout=60)
    if done.interrupted:
        raise KeyboardInterrupt
    found = done.stdout.strip() if done.ok else ""
    return Path(found) if found else None


@lru_cache(maxsize=64)
def bench_dialect(python: Path, pythonpath: str = "") -> BenchDialect:
    """How this leg's ``vllm bench`` spells the built-ins' flags (see :class:`BenchDialect`).
    A leg without vLLM (the CPU reproduction) gets the current spelling; it never runs a
    built-in anyway."""
    package = vllm_package_dir(python, pythonpath)
    if package is None:
        return CURRENT
    bench = package / "benchmarks"
    sources = [*bench.glob("datasets.py"), *bench.glob("datasets/*.py"), bench / "throughput.py"]
    for src in sources:
        try:
            if '"--random-input-len"' in src.read_text(encoding="utf-8", errors="replace"):
                return CURRENT
        except OSError:
            continue
    return PLAIN_LENGTHS
