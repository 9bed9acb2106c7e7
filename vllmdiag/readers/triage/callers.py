"""Programs that build vLLM's command line for the user (pure).

A wrapper such as ramalama runs ``vllm serve`` (or vLLM's API server module) with
arguments it chose; when vLLM refuses one of them (``vllm: error: unrecognized
arguments``), the wrapper passed it, not the user and not vLLM. Such a wrapper names
itself in the log (the command it prints before running it, its container's label), and
those lines are what is looked for here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol

_SITE = re.compile(r"(?:^|/)(?:site|dist)-packages/(?P<rest>.+)$", re.IGNORECASE)


class _HasFile(Protocol):
    @property
    def file(self) -> str: ...


class _HasFrames(Protocol):
    @property
    def frames(self) -> Sequence[_HasFile]: ...


class HasLinks(Protocol):
    @property
    def links(self) -> Sequence[_HasFrames]: ...


#: Each wrapper by the text its own lines carry: its name, or what only it puts in the
#: command line it builds (ramalama mounts the model at ``/mnt/models/model.file``).
WRAPPERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "ramalama",
        re.compile(r"\bramalama\b|\bRAMALAMA\b|ramalama_\w+|/mnt/models/model\.file", re.I),
    ),
    ("openllm", re.compile(r"\bopenllm (?:build|start|serve|run)\b|\bBentoLLM\b")),
)
#: Literals the log reader searches every block for, so those lines reach the watch.
LITERALS: tuple[bytes, ...] = (
    b"amalama",
    b"AMALAMA",
    b"/mnt/models/model.file",
    b"openllm ",
    b"BentoLLM",
    b"GraphRAG Indexer",
)
#: The same, as lower-case text: a line holding one is asked which wrapper it shows.
WRAPPER_HINTS: tuple[str, ...] = ("amalama", "/mnt/models/model.file", "openllm ", "bentollm")


#: Frameworks that drive vLLM by the words only their own log lines have (RAGFlow's
#: ``Fail to access model(VLLM/x).`` when it relays an error of its model call).
FRAMEWORK_LINES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ragflow", re.compile(r"\bFail to access model ?\(")),
    # production-stack's router: its config watcher and its package
    ("vllm_router", re.compile(r"\bDynamicConfigWatcher\b|\bvllm_router\b")),
    # smolagents' AgentGenerationError around the model call's error
    ("smolagents", re.compile(r"\bError in generating model output\b")),
    # DSPy's log record tag (``[dspy.teleprompt.bootstrap] filename=bootstrap.py``)
    ("dspy", re.compile(r"\[dspy(?:\.\w+)*\] filename=")),
    # Spring AI's exceptions (a Java client of vLLM's OpenAI server)
    ("spring-ai", re.compile(r"\borg\.springframework\.ai\.")),
    # GraphRAG's indexer progress (``GraphRAG Indexer``, then its workflows)
    ("graphrag", re.compile(r"\bGraphRAG Indexer\b")),
    # Dify's OpenAI-compatible model provider relaying the server's answer
    ("dify", re.compile(r"\[openai_api_compatible\] Error: API request failed")),
)
FRAMEWORK_HINTS: tuple[str, ...] = (
    "access model",
    "DynamicConfigWatcher",
    "vllm_router",
    "generating model output",
    "[dspy",
    "springframework.ai",
    "GraphRAG Indexer",
    "[openai_api_compatible]",
)


def framework_line(text: str) -> str | None:
    """The framework whose own line ``text`` is, or None."""
    for name, pattern in FRAMEWORK_LINES:
        if pattern.search(text):
            return name
    return None


def wrapper_in(text: str) -> str | None:
    """The wrapper a line shows running vLLM's command, or None."""
    for name, pattern in WRAPPERS:
        if pattern.search(text):
            return name
    return None


#: Projects that drive vLLM (serving stacks, trainers, proxies, evaluators): their code
#: calls vLLM, vLLM does not use it. An exception raised in one of them is that caller's
#: to fix, not a dependency's. Keyed by the name their package or checkout folder has.
FRAMEWORKS: frozenset[str] = frozenset(
    {
        "litellm",
        "sglang",
        "openrlhf",
        "trl",
        "verl",
        "llamafactory",
        "xinference",
        "minference",  # patches vLLM's model code for long-context inference
        "gpustack",
        "ragflow",
        "lighteval",
        "lm_eval",
        "swift",
        "easyr1",
        "lmms_eval",
        "langchain",
        "langchain_community",
        "llama_index",
        "dynamo",
        "kserve",
        "ramalama",
        # trainers and evaluators that run vLLM for rollouts or scoring
        "cosmos_rl",
        "tunix",
        "skyrl_train",
        "rllm",
        "areal",
        "roll",
        "nemo_rl",
        "slime",
        "open_instruct",
        "agentlightning",
        "easysteer",
        "evalscope",
        "opencompass",
        "distilabel",
        "fastchat",
        "lmms_engine",
        "realhf",
        "verifiers",
        "prime_rl",
        "nemo_skills",
        "dspy",
        "haystack",
        "bentoml",
        "openllm",
        "guidellm",
        "open_r1",
        "marti",
        "ragen",
        "simple_evals",
        "bespokelabs",
        "bentovllm",
        "vllm_tgis_adapter",
        "vllm_omni",
        "lmcache_vllm",
        "dsp",
        "vllm_router",
        "unsloth",
        "unsloth_zoo",
        "smolagents",
        "graphrag",
        # ipex-llm's own vLLM front end (ipex_llm/vllm/xpu/entrypoints/openai/api_server.py)
        "ipex_llm",
        # FlashRAG's generators (VLLMGenerator) drive vLLM
        "flashrag",
    }
)
#: Companion packages of the vLLM organisation that are released with each vLLM release
#: and must match it: one asking for what the installed vLLM does not have is the
#: installed pair, not code to change.
LOCKSTEP: frozenset[str] = frozenset(
    {"vllm_omni", "vllm_ascend", "vllm_gaudi", "vllm_spyre", "vllm_metal", "tpu_inference"}
)
#: Frameworks whose code lies in a folder of another name, by a stretch of the path:
#: KServe's Hugging Face server, Triton's vLLM backend, Outlines' server.
_PATH_PROJECTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:^|/)huggingfaceserver/"), "kserve"),
    (re.compile(r"(?:^|/)tritonserver/backends/vllm/"), "triton-vllm-backend"),
    (re.compile(r"(?:^|/)unsloth_compiled_cache/"), "unsloth"),
    # Outlines' own OpenAI-style server, which runs vLLM (``python -m outlines.serve.serve``)
    (re.compile(r"(?:^|/)outlines/serve/"), "outlines"),
    # dots.ocr's model folder, whose vLLM model file its README has the ``vllm`` script
    # import (``/dotsocr/weights/DotsOCR/modeling_dots_ocr_vllm.py``)
    (re.compile(r"(?:^|/)DotsOCR/|(?:^|/)dotsocr/"), "dots.ocr"),
)
#: The other names a project goes by (its distribution, its repository), by the name
#: triage gives it (its package's, as a frame's path shows it): one party, however a
#: reader spells it.
PROJECT_NAMES: dict[str, frozenset[str]] = {
    "lm_eval": frozenset({"lm-eval", "lm-evaluation-harness"}),
    "llamafactory": frozenset({"llama-factory", "llamafactory"}),
    "swift": frozenset({"ms-swift"}),
    "dynamo": frozenset({"ai-dynamo", "dynamo-run"}),
    "cosmos_rl": frozenset({"cosmos-rl"}),
    "skyrl_train": frozenset({"skyrl", "skyrl-train"}),
    "realhf": frozenset({"areal"}),
    "lmms_eval": frozenset({"lmms-eval"}),
    "nemo_rl": frozenset({"nemo-rl"}),
    "open_instruct": frozenset({"open-instruct"}),
    "prime_rl": frozenset({"prime-rl"}),
    "open_r1": frozenset({"open-r1"}),
    "ipex_llm": frozenset({"ipex-llm"}),
    "agentlightning": frozenset({"agent-lightning"}),
    "xinference": frozenset({"inference"}),
    "ray": frozenset({"ray-llm", "ray-serve"}),
    "kserve": frozenset({"huggingfaceserver"}),
    "vllm_tgis_adapter": frozenset({"vllm-tgis-adapter"}),
    "vllm_omni": frozenset({"vllm-omni"}),
    "lmcache_vllm": frozenset({"lmcache-vllm"}),
    "dsp": frozenset({"dspy"}),
    "vllm_router": frozenset({"production-stack"}),
    "triton-vllm-backend": frozenset(
        {"vllm_backend", "triton vllm_backend", "triton-inference-server/vllm_backend"}
    ),
    # the libraries vLLM uses, by their import name
    "cutlass": frozenset({"nvidia-cutlass-dsl", "cutlass-dsl"}),
    "flashinfer": frozenset({"flashinfer-python"}),
    "torch": frozenset({"pytorch"}),
    "cupy_backends": frozenset({"cupy", "cupy-cuda12x"}),
    "huggingface_hub": frozenset({"huggingface-hub", "hf-hub"}),
    "pydantic_core": frozenset({"pydantic"}),
    "flash_attn": frozenset({"flash-attn", "flash-attention"}),
    "vllm_flash_attn": frozenset({"vllm-flash-attn"}),
    "deep_gemm": frozenset({"deepgemm", "deep-gemm"}),
    "sgl_kernel": frozenset({"sgl-kernel"}),
    "mistral_common": frozenset({"mistral-common"}),
    "dots.ocr": frozenset({"dotsocr", "dots_ocr"}),
    "compressed_tensors": frozenset({"compressed-tensors"}),
}


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip().lower())


def same_project(a: str, b: str) -> bool:
    """``a`` and ``b`` name the same project (``lm_eval``, ``lm-eval`` and
    ``lm-evaluation-harness``; case and ``-_.`` aside)."""
    ka, kb = _key(a), _key(b)
    if ka == kb:
        return True
    for module, others in PROJECT_NAMES.items():
        names = {_key(module)} | {_key(o) for o in others}
        if ka in names and kb in names:
            return True
    return False


#: Folders a project keeps its runnable scripts (or its server's code) in: a script under
#: ``<project>/demo/`` is that project's (GLM-4's ``basic_demo/glm_server.py``), not the
#: user's own.
_SCRIPT_DIRS = frozenset(
    {
        "demo",
        "demos",
        "basic_demo",
        "examples",
        "example",
        "scripts",
        "inference",
        "cookbook",
        "backend",  # a web application's server half (``SQLBot/backend/apps/..``)
        "src",  # a project's sources (``top_nsigma/src/vllm/sampler.py``)
    }
)
#: A checkout unpacked from a GitHub archive: ``<repository>-main``, ``<repository>-master``.
_ARCHIVE = re.compile(r"^(?P<name>[\w.-]+?)-(?:main|master)$")
#: Folder names that are a machine's, never a project's.
_GENERIC = frozenset(
    {
        "home",
        "root",
        "users",
        "tmp",
        "temp",
        "data",
        "workspace",
        "workspaces",
        "work",
        "code",
        "src",
        "app",
        "apps",
        "opt",
        "mnt",
        "content",
        "projects",
        "repos",
        "git",
        "srv",
        "usr",
        "local",
        "share",
    }
)


def project_of(path: str) -> str | None:
    """The project whose checkout a script lies in, where its folder says so: the folder
    above a scripts folder (``.../GLM-4/basic_demo/glm_server.py``: GLM-4), or None."""
    parts = [p for p in path.replace("\\", "/").split("/") if p][:-1]
    for part in reversed(parts):
        archive = _ARCHIVE.match(part)
        if archive is not None:
            return archive["name"]
    for i in range(len(parts) - 1, 0, -1):
        if parts[i].lower() in _SCRIPT_DIRS:
            parent = parts[i - 1]
            if parent.lower() in _GENERIC or parent.startswith((".", "~")):
                return None
            if i >= 2 and parts[i - 2].lower() in ("home", "users"):
                return None  # a user's home folder, not a project
            return parent
    return None


def path_project(path: str) -> str | None:
    """The framework a stretch of the path names, where its code lies in a folder of
    another name (an installed package's too: ``site-packages/outlines/serve/``)."""
    norm = path.replace("\\", "/")
    return next((project for pattern, project in _PATH_PROJECTS if pattern.search(norm)), None)


def framework_in(path: str) -> str | None:
    """The framework whose checkout a frame's path lies in (``.../sglang/python/sglang/
    srt/x.py``: sglang; ``.../BentoVLLM/x/utils.py``: bentovllm), or None."""
    norm = path.replace("\\", "/")
    named = path_project(norm)
    if named is not None:
        return named
    parts = [p for p in norm.split("/") if p][:-1]
    for part in reversed(parts):
        if part.lower() in FRAMEWORKS:
            return part.lower()
    return None


def frameworks_seen(tracebacks: Iterable[HasLinks]) -> str | None:
    """The first framework driving vLLM whose code a frame of any traceback shows (an
    installed package of one, or its checkout), or None."""
    for tb in tracebacks:
        for link in tb.links:
            for frame in link.frames:
                name = _framework_of(frame.file)
                if name is not None:
                    return name
    return None


def _framework_of(path: str) -> str | None:
    """The framework a frame's file is of: an installed package of one, its checkout,
    or a package installed in a virtual environment inside its checkout
    (``.../kserve/python/huggingfaceserver/.venv/lib/python3.10/site-packages/x``)."""
    p = path.replace("\\", "/")
    site = _SITE.search(p)
    if site:
        top = site["rest"].split("/", 1)[0]
        if top in FRAMEWORKS:
            return top
        venv = _VENV.search(p[: site.start()])
        return framework_in(p[: venv.start()] + "/x") if venv else None
    return framework_in(p)


#: A virtual environment's folder inside a project's checkout.
_VENV = re.compile(r"/\.?venv[\w.-]*/lib(?:64)?/python[\d.]+$")
