"""``root_cause.origin``: whose failure it is, read from the frame that raised. The
tracebacks here are real: each scenario runs in a child Python process laid out as the
case needs (an installed vllm, a dependency, a vllmdiag probe, a user's script)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vllmdiag import codec, proc
from vllmdiag.triage import Catalogue, triage_file
from vllmdiag.triage.origin import classify

SITE = "site-packages"


def _crash(tmp_path: Path, files: dict[str, str], script: str) -> tuple[str, str | None, str]:
    """Lay ``files`` out under ``tmp_path``, run ``script`` (a file among them) with the
    fake site-packages first on the path, triage what it printed: (origin, package,
    evidence)."""
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    done = proc.run(
        [sys.executable, str(tmp_path / script)],
        env={"PYTHONPATH": str(tmp_path / SITE)},
        capture=True,
        timeout=60,
    )
    assert done.rc == 1 and "Traceback (most recent call last)" in done.stderr
    log = tmp_path / "run.log"
    log.write_text(done.stderr)
    rc = triage_file(log, Catalogue.load(use_env=False)).root_cause
    assert rc is not None
    return rc.origin, rc.package, rc.evidence


def test_raised_in_vllm_from_a_user_script_is_vllm(tmp_path: Path) -> None:
    files = {
        f"{SITE}/vllm/__init__.py": "",
        f"{SITE}/vllm/engine.py": "def start(n):\n    raise ValueError(f'bad max_model_len {n}')\n",
        "bench.py": "import vllm.engine\nvllm.engine.start(4096)\n",
    }
    assert _crash(tmp_path, files, "bench.py") == ("vllm", "vllm", "traceback")


def test_raised_in_a_dependency_names_the_package(tmp_path: Path) -> None:
    files = {
        f"{SITE}/vllm/__init__.py": "",
        f"{SITE}/vllm/config.py": "import transformers.auto\ndef load():\n"
        "    transformers.auto.parse('gemma4')\n",
        f"{SITE}/transformers/__init__.py": "",
        f"{SITE}/transformers/auto.py": "def parse(t):\n    raise KeyError(t)\n",
        "serve.py": "import vllm.config\nvllm.config.load()\n",
    }
    assert _crash(tmp_path, files, "serve.py") == ("dependency", "transformers", "traceback")


def test_raised_in_a_vllmdiag_probe_is_the_tools_error(tmp_path: Path) -> None:
    files = {
        f"{SITE}/vllm/__init__.py": "",
        "src/vllmdiag/probes/smoke.py": "import vllm\nargs = {}\nprint(args['model'])\n",
    }
    origin, package, _ = _crash(tmp_path, files, "src/vllmdiag/probes/smoke.py")
    assert (origin, package) == ("tool", "vllmdiag")


def test_raised_in_the_workloads_own_script_is_user(tmp_path: Path) -> None:
    files = {"work/run.py": "def main():\n    return 1 / 0\nmain()\n"}
    assert _crash(tmp_path, files, "work/run.py") == ("user", None, "traceback")


def test_stdlib_frames_do_not_decide(tmp_path: Path) -> None:
    files = {
        f"{SITE}/vllm/__init__.py": "",
        f"{SITE}/vllm/utils.py": "import json\ndef read(s):\n    return json.loads(s)\n",
        "go.py": "import vllm.utils\nvllm.utils.read('{')\n",
    }
    # json.decoder raised it, inside the standard library: vLLM's call is what counts
    assert _crash(tmp_path, files, "go.py") == ("vllm", "vllm", "traceback")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", ("vllm", "vllm")),
        ("/usr/local/lib/python3.10/dist-packages/torch/nn/functional.py", ("dependency", "torch")),
        (
            "/x/lib64/python3.11/site-packages/vllm-0.16.0+cpu-py3.11-linux.egg/vllm/a.py",
            ("vllm", "vllm"),
        ),
        (
            r"C:\Users\u\venv\Lib\site-packages\vllm\v1\executor\multiproc_executor.py",
            ("vllm", "vllm"),
        ),
        (r"C:\Users\u\Python312\Lib\concurrent\futures\_base.py", (None, None)),
        ("/usr/lib/python3.12/multiprocessing/process.py", (None, None)),
        ("<frozen runpy>", (None, None)),
        ("<string>", ("user", None)),
        ("/workspace/vllm/vllm/engine/llm_engine.py", ("vllm", "vllm")),
        ("/home/me/vllm/bench.py", ("user", None)),
        ("/work/main/vllmdiag/probes/vllm_smoke.py", ("tool", "vllmdiag")),
        ("/venv/lib/python3.11/site-packages/vllmdiag/probes/stack.py", ("tool", "vllmdiag")),
        ("/venv/lib/python3.11/site-packages/six.py", ("dependency", "six")),
        ("xoscar/core.pyx", ("dependency", "xoscar")),
        ("benchmark_latency.py", ("user", None)),
    ],
)
def test_classify(path: str, expected: tuple[str | None, str | None]) -> None:
    assert classify(path) == expected


def test_no_frame_in_view_is_unknown(tmp_path: Path) -> None:
    log = tmp_path / "one.log"
    log.write_text("ValueError: Cannot find model module. 'X' is not a registered model\n")
    rc = triage_file(log).root_cause
    assert rc is not None and (rc.origin, rc.package, rc.evidence) == (
        "unknown",
        None,
        "exception-line",
    )
    assert codec.dump(rc)["origin"] == "unknown" and not rc.is_tool_error
