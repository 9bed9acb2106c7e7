"""The static read: which sources bind a name for sure, which surely do not, and which
cannot be told without importing. Every case is real Python source; "present" and
"absent" must never be wrong, so every doubtful case must come back undecided."""

from __future__ import annotations

import pytest
from packaging.version import Version

from vllmdiag.services.pkgindex import candidates, pick_wheel, project, read_version, read_versions
from vllmdiag.services.pkgindex.source_binding import module_binds, parent_touches

PRESENT = [
    "class ThrMma(_ThrMma):\n    pass\n",
    "def ThrMma():\n    pass\n",
    "async def ThrMma():\n    pass\n",
    "ThrMma = _make('x')\n",
    "a, (b, ThrMma) = 1, (2, 3)\n",
    "ThrMma: type = int\n",
    "from .atom import (\n    MmaAtom,\n    ThrMma,\n)\n",
    "from .atom import MmaAtom, ThrMma as ThrMma\n",
    "from .atom import Thr as ThrMma\n",
    "import ThrMma\n",
    "import os as ThrMma\n",
    "if X:\n    ThrMma = 1\nelse:\n    ThrMma = 2\n",
    "try:\n    from a import ThrMma\nexcept ImportError:\n    ThrMma = None\n",
    "try:\n    from a import ThrMma\nexcept ImportError:\n    raise\n",
    "import warnings\nwith warnings.catch_warnings():\n    from a import ThrMma\n",
    # A later, unrelated use of the name does not undo the definition.
    "class ThrMma: ...\nx = globals()\n",
]

ABSENT = [
    "import os\n",
    "def f(thr_mma: 'ThrMma'): ...\n",
    "# ThrMma moved to atom\nimport os\n",
    "def f():\n    ThrMma = 1\n    return ThrMma\n",
    "class C:\n    ThrMma = 1\n",
    "x = C.ThrMma\n",
    "ThrMma: type\n",  # an annotation alone binds nothing
    "def f():\n    '''see ThrMma'''\n",
]

UNDECIDED = [
    "from .atom import *\n",
    "def __getattr__(name):\n    ...\n",
    "__getattr__ = _lazy\n",
    "__getattr__, __dir__, __all__ = lazy.attach(__name__, ['ThrMma'])\n",
    "if TYPE_CHECKING:\n    from .atom import ThrMma\n",
    "try:\n    from a import ThrMma\nexcept ImportError:\n    pass\n",
    "for ThrMma in range(3):\n    pass\n",
    "from contextlib import suppress\nwith suppress(ImportError):\n    from a import ThrMma\n",
    "def f():\n    global ThrMma\n    ThrMma = 1\n",
    "globals()['Thr' + 'Mma'] = 1\n",
    "globals().update(table)\n",
    "setattr(sys.modules[__name__], name, value)\n",
    "exec(code)\n",
    "vars()[name] = 1\n",
    "__all__ = ['ThrMma']\n",
    "class ThrMma: ...\ndel ThrMma\n",
    "class ThrMma: ...\ndelattr(mod, 'ThrMma')\n",
    "sys.modules[__name__] = Proxy()\n",
    "class ThrMma: ...\nsys.modules[__name__] = Proxy()\n",
    "class ThrMma: ...\nsys.modules[__name__].__class__ = Lazy\n",
    "(ThrMma := 1) if x else 0\n",
    "def broken(:\n    ThrMma = 1\n",  # does not parse: the import would fail
]


@pytest.mark.parametrize("source", PRESENT)
def test_surely_bound_is_present(source: str) -> None:
    reading = module_binds(source, "ThrMma", filename="core.py")
    assert reading.has is True, reading
    assert "core.py:" in reading.why


@pytest.mark.parametrize("source", ABSENT)
def test_nothing_that_can_bind_it_is_absent(source: str) -> None:
    reading = module_binds(source, "ThrMma", filename="core.py")
    assert reading.has is False, reading


@pytest.mark.parametrize("source", UNDECIDED)
def test_anything_doubtful_is_undecided(source: str) -> None:
    reading = module_binds(source, "ThrMma", filename="core.py")
    assert reading.has is None, reading
    assert reading.why


def test_the_reason_names_the_line() -> None:
    src = "import os\n\n\nfrom .atom import *\n"
    assert module_binds(src, "ThrMma", filename="a/core.py").why == (
        "a/core.py:4 star-imports from .atom"
    )
    assert module_binds("x = 1\nclass ThrMma: ...\n", "ThrMma").why.endswith(":2")


def test_a_parent_that_patches_the_module_from_outside() -> None:
    assert parent_touches("from . import core\ncore.ThrMma = object\n", "ThrMma")
    assert parent_touches("from . import core\ndel core.ThrMma\n", "ThrMma")
    assert parent_touches("setattr(core, 'ThrMma', 1)\n", "ThrMma")
    assert parent_touches("import sys\nsys.modules['a.core'] = x\n", "ThrMma")
    # Re-exporting it, or listing it in __all__, binds it on the parent, not the module.
    cute_init = "from .atom import (\n    ThrMma,\n)\n__all__ = ['ThrMma']\n"
    assert parent_touches(cute_init, "ThrMma") is None
    assert parent_touches("import os\n", "ThrMma") is None


def test_a_large_module_is_read_quickly() -> None:
    import time

    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(8000))
    src = body + "class ThrMma:\n    pass\n"
    start = time.process_time()
    assert module_binds(src, "ThrMma").has is True
    assert module_binds(body, "ThrMma").has is False
    assert time.process_time() - start < 2.0


# The real wheels on the index, read by range requests (nothing installed).


@pytest.mark.network
def test_packaging_legacy_version_from_its_wheels() -> None:
    proj = project("packaging")
    versions = [Version(v) for v in ("20.9", "21.3", "22.0", "23.0")]
    answers = read_versions(proj.files, versions, "packaging.version.LegacyVersion", "3.11")
    assert [a.has for a in answers] == [True, True, False, False]
    assert answers[1].wheel == "packaging-21.3-py3-none-any.whl"
    assert "class LegacyVersion at packaging/version.py:" in answers[1].detail
    seen: list[int] = []
    read_versions(
        proj.files, versions[:2], "packaging.version.LegacyVersion", "3.11",
        on_answer=lambda i, a: seen.append(i),
    )  # fmt: skip
    assert sorted(seen) == [0, 1]


@pytest.mark.network
def test_cutlass_through_its_meta_package_and_pth_directories() -> None:
    """4.3.5 ships the module itself; 4.5.3 in its -libs-base pin; 4.6.0 two pins down
    (-libs-base, then -libs-core), under a directory the meta-package's .pth adds."""
    proj = project("nvidia-cutlass-dsl")
    got = {
        v: read_version(proj.files, Version(v), "cutlass.cute.core", "ThrMma", "3.11")
        for v in ("4.3.5", "4.5.3", "4.6.0")
    }
    assert {v: a.has for v, a in got.items()} == {"4.3.5": True, "4.5.3": True, "4.6.0": False}
    assert got["4.3.5"].wheel.startswith("nvidia_cutlass_dsl-4.3.5-")
    assert got["4.5.3"].wheel.startswith("nvidia_cutlass_dsl_libs_base-4.5.3-")
    assert got["4.6.0"].wheel == "nvidia_cutlass_dsl_libs_core-4.6.0-py3-none-any.whl"
    # A module that is in no wheel of the chain cannot be told statically.
    missing = read_version(proj.files, Version("4.6.0"), "cutlass.nosuch", "X", "3.11")
    assert missing.has is None and "not in the wheels read" in missing.detail


@pytest.mark.network
def test_pick_wheel_takes_what_installs_here() -> None:
    proj = project("nvidia-cutlass-dsl")
    wheel = pick_wheel(proj.files, Version("4.3.5"), "3.11")
    assert wheel is not None and "cp311" in wheel.filename and "x86_64" in wheel.filename
    assert pick_wheel(proj.files, Version("4.3.5"), "3.2") is None  # nothing for Python 3.2
    versions = [c.version for c in candidates(proj.files, python="3.11")]
    assert all(pick_wheel(proj.files, v, "3.11") is not None for v in versions)
