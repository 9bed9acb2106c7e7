"""``root_cause.origin``: whose fault it is, from what the error says and who passed what.
The tracebacks here are real: each scenario runs in a child Python process laid out as the
case needs (an installed vllm, a dependency, a framework driving vLLM, the running
vllmdiag's own probe, a user's script)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import vllmdiag
from vllmdiag import codec
from vllmdiag.readers.triage import Catalogue, triage_file
from vllmdiag.readers.triage.origin import classify
from vllmdiag.services import proc

PACKAGE = Path(vllmdiag.__file__).resolve().parent

SITE = "site-packages"


def _crash(
    tmp_path: Path, files: dict[str, str], script: str | Path, *args: str
) -> tuple[str, str | None, str]:
    """Lay ``files`` out under ``tmp_path``, run ``script`` (a file among them, or a path)
    with the fake site-packages first on the path, triage what it printed: (origin,
    package, evidence)."""
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    done = proc.run(
        [sys.executable, str(tmp_path / script), *args],
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


#: A vLLM whose LLM validates its keywords with pydantic, as 0.26's config classes do:
#: engine arguments passed through ``dataclasses.asdict`` come back as dicts and fail.
_PYDANTIC_VLLM = {
    f"{SITE}/vllm/__init__.py": "from vllm.entrypoints.llm import LLM\n"
    "class SamplingParams: pass\n",
    f"{SITE}/vllm/entrypoints/__init__.py": "",
    f"{SITE}/vllm/entrypoints/llm.py": "from vllm.config import ModelConfig\n"
    "class LLM:\n    def __init__(self, **kw):\n        self.config = ModelConfig(**kw)\n",
    f"{SITE}/vllm/config.py": "import pydantic\n"
    "class ModelConfig(pydantic.BaseModel):\n"
    "    model_config = pydantic.ConfigDict(extra='forbid')\n"
    "    model: str\n    compilation_config: int = 0\n",
    f"{SITE}/vllm/utils/__init__.py": "",
    f"{SITE}/vllm/utils/argparse_utils.py": "from argparse import ArgumentParser as "
    "FlexibleArgumentParser\n",
    f"{SITE}/vllm/engine/__init__.py": "",
    f"{SITE}/vllm/engine/arg_utils.py": "import dataclasses\n"
    "@dataclasses.dataclass\nclass EngineArgs:\n    model: str = ''\n"
    "    compilation_config: dict = dataclasses.field(default_factory=dict)\n"
    "    @staticmethod\n    def add_cli_args(p):\n        p.add_argument('--model')\n"
    "        return p\n"
    "    @classmethod\n    def from_cli_args(cls, args):\n        return cls(model=args.model)\n",
}


def test_the_running_probe_passing_values_vllm_refuses_is_the_tools_error(
    tmp_path: Path,
) -> None:
    """vllmdiag's own smoke probe (the running package's file) builds the engine with
    ``LLM(**asdict(engine_args))``; the validation error is raised in pydantic, but
    pydantic only carried the check and vLLM only received the values: the probe passed
    them, so it is vllmdiag's own failure (an ERROR, never a verdict)."""
    probe = PACKAGE / "probes" / "vllm_smoke.py"
    origin, package, _ = _crash(tmp_path, _PYDANTIC_VLLM, probe, "--model", "m")
    assert (origin, package) == ("tool", "vllmdiag")


def test_the_probe_passing_on_the_users_length_that_vllm_refuses_is_the_users_config(
    tmp_path: Path,
) -> None:
    """The same probe, and vLLM's own check of the recipe's --max-model-len: the probe
    only carried the user's value, as pydantic carried vLLM's check."""
    files = {
        **_PYDANTIC_VLLM,
        f"{SITE}/vllm/config.py": "import pydantic\n"
        "class ModelConfig(pydantic.BaseModel):\n    model: str\n    max_model_len: int\n"
        "    @pydantic.field_validator('max_model_len')\n    @classmethod\n"
        "    def fits(cls, v):\n        if v > 4096:\n"
        "            raise ValueError(f'User-specified max_model_len ({v}) is greater than the '\n"
        "                'derived max_model_len (max_position_embeddings=4096 or '\n"
        "                'model_max_length=None in model config.json).')\n"
        "        return v\n",
        f"{SITE}/vllm/engine/arg_utils.py": "import dataclasses\n"
        "@dataclasses.dataclass\nclass EngineArgs:\n    model: str = ''\n"
        "    max_model_len: int = 0\n"
        "    @staticmethod\n    def add_cli_args(p):\n        p.add_argument('--model')\n"
        "        p.add_argument('--max-model-len', type=int)\n        return p\n"
        "    @classmethod\n    def from_cli_args(cls, args):\n"
        "        return cls(model=args.model, max_model_len=args.max_model_len)\n",
    }
    probe = PACKAGE / "probes" / "vllm_smoke.py"
    origin, package, _ = _crash(tmp_path, files, probe, "--model", "m", "--max-model-len", "65536")
    assert (origin, package) == ("config", None)


def test_a_copy_of_the_probe_in_a_folder_named_vllmdiag_is_not_the_tool(tmp_path: Path) -> None:
    """The same file under a directory that is merely called ``vllmdiag`` (a clone under
    git's default name, a recipe's folder) is the workload's script, not the tool."""
    probe = (PACKAGE / "probes" / "vllm_smoke.py").read_text()
    copy = {"clone/vllmdiag/probes/vllm_smoke.py": probe}
    origin, package, _ = _crash(
        tmp_path, {**_PYDANTIC_VLLM, **copy}, "clone/vllmdiag/probes/vllm_smoke.py", "--model", "m"
    )
    assert (origin, package) == ("caller", None)


def test_a_framework_passing_a_removed_keyword_is_the_callers_fault(tmp_path: Path) -> None:
    files = {
        f"{SITE}/vllm/__init__.py": "",
        f"{SITE}/vllm/engine/__init__.py": "",
        f"{SITE}/vllm/engine/arg_utils.py": "import dataclasses\n"
        "@dataclasses.dataclass\nclass AsyncEngineArgs:\n    model: str = ''\n",
        f"{SITE}/fastllm/__init__.py": "",
        f"{SITE}/fastllm/launch.py": "from vllm.engine.arg_utils import AsyncEngineArgs\n"
        "def start():\n    return AsyncEngineArgs(model='m', worker_use_ray=True)\n",
        "serve.py": "import fastllm.launch\nfastllm.launch.start()\n",
    }
    assert _crash(tmp_path, files, "serve.py") == ("caller", "fastllm", "traceback")


def test_a_script_passing_a_keyword_llm_does_not_take_is_the_callers_fault(
    tmp_path: Path,
) -> None:
    """Raised inside vLLM's ``LLM`` (it forwards the keywords), passed by the script."""
    files = {
        f"{SITE}/vllm/__init__.py": "from vllm.llm import LLM\n",
        f"{SITE}/vllm/llm.py": "import dataclasses\n"
        "@dataclasses.dataclass\nclass EngineArgs:\n    model: str = ''\n"
        "class LLM:\n    def __init__(self, **kw):\n        self.args = EngineArgs(**kw)\n",
        "bench.py": "import vllm\nvllm.LLM(model='m', trust_remote_code=True)\n",
    }
    assert _crash(tmp_path, files, "bench.py") == ("caller", None, "traceback")


def test_vllms_own_check_on_its_command_line_is_the_users_config(tmp_path: Path) -> None:
    """``vllm serve --max-model-len 65536`` of a 4096-position model: vLLM's validator
    raises through pydantic, and the value came in on vLLM's own command line."""
    files = {
        f"{SITE}/vllm/__init__.py": "",
        f"{SITE}/vllm/config.py": "import pydantic\n"
        "class ModelConfig(pydantic.BaseModel):\n    max_model_len: int\n"
        "    @pydantic.field_validator('max_model_len')\n    @classmethod\n"
        "    def fits(cls, v):\n        if v > 4096:\n"
        "            raise ValueError(f'the asked length ({v}) does not fit')\n"
        "        return v\n",
        f"{SITE}/vllm/cli.py": "import sys\nfrom vllm.config import ModelConfig\n"
        "def main():\n    ModelConfig(max_model_len=int(sys.argv[-1]))\n",
        f"{SITE}/vllm/__main__.py": "from vllm.cli import main\nmain()\n",
    }
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    done = proc.run(
        [sys.executable, "-m", "vllm", "65536"],
        env={"PYTHONPATH": str(tmp_path / SITE)},
        capture=True,
        timeout=60,
    )
    assert done.rc == 1 and "ValidationError" in done.stderr
    log = tmp_path / "serve.log"
    log.write_text(done.stderr)
    rc = triage_file(log, Catalogue.load(use_env=False)).root_cause
    assert rc is not None and rc.raised_in == "pydantic"
    assert (rc.origin, rc.package) == ("config", None)
    assert "setting the user gave" in rc.why


def test_raised_in_the_workloads_own_script_is_the_callers(tmp_path: Path) -> None:
    files = {"work/run.py": "def main():\n    return 1 / 0\nmain()\n"}
    assert _crash(tmp_path, files, "work/run.py") == ("caller", None, "traceback")


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
        # a checkout that is not the running vllmdiag: only a folder with that name
        ("/home/me/vllmdiag/vllmdiag/probes/vllm_smoke.py", ("user", None)),
        ("/home/me/vllmdiag/recipes/thrmma/engine_start.py", ("user", None)),
        ("/venv/lib/python3.11/site-packages/vllmdiag/probes/stack.py", ("tool", "vllmdiag")),
        ("/venv/lib/python3.11/site-packages/six.py", ("dependency", "six")),
        ("xoscar/core.pyx", ("dependency", "xoscar")),
        ("benchmark_latency.py", ("user", None)),
    ],
)
def test_classify(path: str, expected: tuple[str | None, str | None]) -> None:
    assert classify(path) == expected


def test_the_running_package_and_the_run_directory_are_the_tools(tmp_path: Path) -> None:
    assert classify(str(PACKAGE / "probes" / "stack.py")) == ("tool", "vllmdiag")
    launcher = tmp_path / "run" / "cells" / "r1.baseline.w" / "launch.py"
    assert classify(str(launcher)) == ("user", None)
    assert classify(str(launcher), [str(tmp_path / "run")]) == ("tool", "vllmdiag")
    assert classify(str(tmp_path / "runner.py"), [str(tmp_path / "run")]) == ("user", None)


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


def test_a_wrapper_that_built_the_command_line_is_blamed_far_above_the_error(
    tmp_path: Path,
) -> None:
    """ramalama prints the command it runs, then vLLM's whole usage text, then vLLM's
    refusal (containers/ramalama#758's shape): the wrapper passed the arguments."""
    usage = [f"                   [--option-{i} OPTION_{i}]" for i in range(60)]
    log = tmp_path / "ramalama.log"
    log.write_text(
        "\n".join(
            [
                "exec_cmd:  podman run --rm -i --label RAMALAMA --name ramalama_PNB6UFIqIM "
                "quay.io/modh/vllm:rhoai-2.17-cuda llama-run -c 2048 --temp 0.8 /mnt/models/m",
                "usage: __main__.py [-h] [--host HOST] [--port PORT]",
                *usage,
                "__main__.py: error: unrecognized arguments: llama-run -c 2048 --temp 0.8",
            ]
        )
        + "\n"
    )
    rc = triage_file(log, Catalogue.load(use_env=False)).root_cause
    assert rc is not None and rc.evidence == "cli-error"
    assert (rc.origin, rc.package) == ("caller", "ramalama")
    alone = tmp_path / "alone.log"
    alone.write_text("vllm: error: unrecognized arguments: --temperature 0.8\n")
    rc = triage_file(alone, Catalogue.load(use_env=False)).root_cause
    assert rc is not None and (rc.origin, rc.package) == ("config", None)


def test_gemma4_on_026_is_transformers_tightened_access_not_missing_support(
    tmp_path: Path,
) -> None:
    """The B200/H200 ablation's lesson: transformers 5.17 raises on a global read of a
    per-layer attribute, and vLLM 0.26 reads ``config.head_dim`` (the error text is the
    B200/H200 ablation's)."""
    files = {
        f"{SITE}/transformers/__init__.py": "",
        f"{SITE}/transformers/configuration_utils.py": "class AmbiguousGlobalPerLayerAttributeError"
        "(AttributeError): pass\nclass PretrainedConfig:\n    def __getattr__(self, name):\n"
        "        raise AmbiguousGlobalPerLayerAttributeError(f\"'{name}' is a per-layer attribute"
        ' and may vary across layers. Access it via the individual layer configs instead")\n',
        f"{SITE}/vllm/__init__.py": "",
        f"{SITE}/vllm/model_arch_config_convertor.py": "def head_size(config):\n"
        "    return config.head_dim\n",
        "serve.py": "from transformers.configuration_utils import PretrainedConfig\n"
        "import vllm.model_arch_config_convertor as c\nc.head_size(PretrainedConfig())\n",
    }
    origin, package, _ = _crash(tmp_path, files, "serve.py")
    assert (origin, package) == ("dependency", "transformers")
    rc = triage_file(tmp_path / "run.log", Catalogue.load(use_env=False)).root_cause
    assert rc is not None and rc.known == "transformers-per-layer-head-dim"
    said = " ".join(x or "" for x in (rc.why, rc.meaning, rc.advice)).lower()
    assert "transformers 5.17" in said and "head_dim" in said
    assert "does not support" not in said and "unsupported" not in said
