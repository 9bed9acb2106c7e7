"""The environment of the failing leg, in the layout of vLLM's ``collect_env.py``
(System, PyTorch, Python, CUDA / GPU, relevant libraries, vLLM, environment variables),
filled from what vllmdiag recorded of the leg: its stack probe, the node's GPUs, its
``uv pip freeze`` and the cell's environment. What was not recorded says so."""

from __future__ import annotations

from collections.abc import Mapping

from vllmdiag.jobs.report import freeze, md
from vllmdiag.model.stack import EnvRecord, cuda_build

#: The libraries ``collect_env.py`` lists (names containing one of these), plus the
#: ones a vLLM failure most often turns on.
RELEVANT = (
    "torch",
    "numpy",
    "triton",
    "optree",
    "onnx",
    "nccl",
    "transformers",
    "zmq",
    "nvidia",
    "pynvml",
    "flashinfer",
    "cutlass",
    "vllm",
    "xformers",
    "cuda",
)
_BAR = "=" * 30
_UNKNOWN = "Could not collect"


def block(env: EnvRecord, cell_env: Mapping[str, str], stand_in: bool = False) -> str:
    """The collect-env style text (plain, for a ``text`` fence). ``stand_in``: the
    failing command runs scripts that stand in for vLLM's code (no vLLM installed)."""
    st = env.stack
    torch = st.torch or "not installed"
    cuda = cuda_build(st.torch, st.torch_cuda, freeze.read(env.freeze).versions)
    no_vllm = (
        "not installed: this reproduction's own scripts stand in for the vLLM code path "
        "(see Reproduction)"
        if stand_in
        else "not installed in this leg"
    )
    python = st.python or _UNKNOWN
    if st.implementation:
        python += f" ({st.implementation})"
    parts = [
        _head("System Info"),
        _row("OS", st.platform or _UNKNOWN),
        "",
        _head("PyTorch Info"),
        _row("PyTorch version", torch),
        _row("CUDA used to build PyTorch", cuda),
        "",
        _head("Python Environment"),
        _row("Python version", python),
        _row("Python platform", st.platform or _UNKNOWN),
        "",
        _head("CUDA / GPU Info"),
        _row("GPU models and configuration", _gpus(env)),
        _row("Nvidia driver version", _driver(env)),
        "",
        _head("Versions of relevant libraries"),
        _libraries(env),
        "",
        _head("vLLM Info"),
        _row("vLLM Version", st.vllm or no_vllm),
        "",
        _head("Environment Variables"),
        "\n".join(f"{k}={v}" for k, v in sorted(cell_env.items())) or "(none set by the run)",
    ]
    return "\n".join(parts)


def section(env: EnvRecord, cell_env: Mapping[str, str], stand_in: bool = False) -> str:
    summary = (
        f"The environment of leg <code>{_html(env.leg)}</code> as vllmdiag recorded it "
        "(stack, GPUs, <code>uv pip freeze</code>), in <code>collect_env.py</code>'s layout"
    )
    return md.details(summary, md.fence(block(env, cell_env, stand_in), "text"))


def _head(title: str) -> str:
    return f"{_BAR}\n{title.center(30).rstrip()}\n{_BAR}"


def _row(label: str, value: str) -> str:
    return f"{label:<29}: {value}"


def _gpus(env: EnvRecord) -> str:
    if env.gpu.error:
        return f"{_UNKNOWN} (nvidia-smi: {env.gpu.error})"
    if not env.gpu.gpus:
        return "none (nvidia-smi listed no GPU)"
    lines = [f"GPU {i}: {g.name} ({g.memory_mib} MiB)" for i, g in enumerate(env.gpu.gpus)]
    return lines[0] if len(lines) == 1 else "\n" + "\n".join(lines)


def _driver(env: EnvRecord) -> str:
    drivers = sorted({g.driver for g in env.gpu.gpus if g.driver})
    return ", ".join(drivers) if drivers else ("N/A" if not env.gpu.error else _UNKNOWN)


def _libraries(env: EnvRecord) -> str:
    pins = freeze.read(env.freeze)
    if not pins.versions:
        listed = [f"{name}=={v}" for name, v in sorted(env.stack.versions().items())]
        return "\n".join(f"[stack] {line}" for line in listed) or "No relevant packages"
    lines = [
        f"[uv] {name}=={version}"
        for name, version in sorted(pins.versions.items())
        if any(word in name for word in RELEVANT)
    ]
    return "\n".join(lines) or "No relevant packages"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
