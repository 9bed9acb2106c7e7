"""Log lines → fingerprint fields. Each rule knows the older and newer spelling of its
line; the first value a log states wins (every worker repeats the same lines)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from vllmdiag.errors import VllmdiagError
from vllmdiag.model.fingerprint import Fingerprint
from vllmdiag.model.shape import WorkloadShape
from vllmdiag.readers.fingerprint.startup import MARKER_WORDS, TimelineBuilder
from vllmdiag.readers.triage.lines import normalise
from vllmdiag.readers.triage.reader import scan

MARKERS = re.compile(
    rb"LLM engine \(v|API server version|vLLM version|non-default args|attention backend"
    rb"|AttentionBackendEnum|backend on V1|MoE backend|PrepareAndFinalize|SMs used for MoE"
    rb"|KV cache size|Maximum concurrency|Chunked prefill|raph captur|CUDA graph|cudagraph"
    rb"|Cudagraph|nforce eager|Encoder cache will|Torch parallelism|OMP_NUM_THREADS"
    rb"|Unknown vLLM environment|plugin| -> |name=|Using \w+ backend"
    rb"|Total num (?:prompt|output) tokens|Across all generated prompts|^# vllmdiag: "
    rb"|" + MARKER_WORDS,
    re.MULTILINE,
)
#: The first vLLM log line (the end of the imports phase) lies in the head of the log.
_HEAD_BYTES = 1 << 20

_OLD_ATTN = {
    "Flash Attention": "FLASH_ATTN",
    "FlashAttention": "FLASH_ATTN",
    "FlashAttention-2": "FLASH_ATTN",
    "FlashInfer": "FLASHINFER",
    "Triton": "TRITON_ATTN",
    "Triton Attention": "TRITON_ATTN",
    "XFormers": "XFORMERS",
    "FlashMLA": "FLASHMLA",
    "Torch SDPA": "TORCH_SDPA",
}


def _int(text: str) -> int:
    return int(text.replace(",", "").replace("_", ""))


def _backend(text: str) -> str:
    """``FlashInfer TRTLLM`` (an enum value of some versions) → ``FLASHINFER_TRTLLM``."""
    return re.sub(r"[\s-]+", "_", text.strip("'\" ")).upper()


def _bool(text: str) -> bool:
    return text == "True" or text == "true"


Setter = Callable[[dict[str, Any], "re.Match[str]"], None]


def _set(field: str, conv: Callable[[str], Any] = str, group: int = 1) -> Setter:
    def apply(out: dict[str, Any], m: re.Match[str]) -> None:
        if out.get(field) is None and m.group(group) is not None:
            out[field] = conv(m.group(group))

    return apply


def _add(field: str) -> Setter:
    def apply(out: dict[str, Any], m: re.Match[str]) -> None:
        items = out.setdefault(field, [])
        if m.group(1) not in items:
            items.append(m.group(1))

    return apply


def _old_attention(out: dict[str, Any], m: re.Match[str]) -> None:
    raw = m.group(1)
    name = _OLD_ATTN.get(raw) or (raw if re.fullmatch(r"[A-Z][A-Z0-9_]+", raw) else None)
    if name and out.get("attention_backend") is None:
        out["attention_backend"] = name


def _mismatch(out: dict[str, Any], m: re.Match[str]) -> None:
    sign = 1 if m.group(2) == "more" else -1
    out["stated_mismatch"] = out.get("stated_mismatch", 0) + sign * _int(m.group(1))


def _sm_split(out: dict[str, Any], m: re.Match[str]) -> None:
    out.setdefault("moe_sm_split", f"{m.group(1)} SMs used for MoE, {m.group(2)} reserved")


def _chunked(out: dict[str, Any], m: re.Match[str]) -> None:
    out.setdefault("chunked_prefill", True)
    out.setdefault("max_num_batched_tokens", _int(m.group(1)))


def _graphs(value: str) -> Setter:
    def apply(out: dict[str, Any], _m: re.Match[str]) -> None:
        # eager evidence wins: a capture line never follows a real eager run
        if value == "eager" or out.get("cuda_graphs") is None:
            out["cuda_graphs"] = value

    return apply


def _config(out: dict[str, Any], m: re.Match[str]) -> None:
    """The engine config line and the non-default args dict (old and new spellings)."""
    text = m.string
    pairs: list[tuple[str, str, Callable[[str], Any]]] = [
        ("model", r"\bmodel=['\"]([^'\"]+)|'model': '([^']+)'", str),
        ("tensor_parallel_size", r"tensor_parallel_size[=':\s]+(\d+)", int),
        ("enforce_eager", r"enforce_eager[=':\s]+(True|False)", _bool),
        (
            "chunked_prefill",
            r"(?:chunked_prefill_enabled|enable_chunked_prefill)[=':\s]+(True|False)",
            _bool,
        ),
        ("max_num_batched_tokens", r"max_num_batched_tokens[=':\s]+(\d+)", int),
        ("gpu_memory_utilization", r"gpu_memory_utilization[=':\s]+([\d.]+)", float),
        ("moe_backend_requested", r"moe_backend[=':\s]+['\"]?(\w+)", str),
        ("attention_backend_requested", r"attention_backend[=':\s]+['\"]?(\w+)", str),
    ]
    for field, pattern, conv in pairs:
        found = re.search(pattern, text)
        if found and out.get(field) is None:
            value = next(g for g in found.groups() if g is not None)
            out[field] = conv(value)


RULES: tuple[tuple[re.Pattern[str], Setter], ...] = (
    (re.compile(r"LLM engine \(v([^)\s]+)\)"), _set("vllm_version")),
    (re.compile(r"vLLM API server version ([\w.+-]+)"), _set("vllm_version")),
    (re.compile(r"^vLLM version ([\w.+-]+)"), _set("vllm_version")),
    (re.compile(r"with config: |non-default args: "), _config),
    (
        re.compile(r"Using AttentionBackendEnum\.(\w+) for MMEncoderAttention"),
        _set("mm_encoder_attention_backend"),
    ),
    (
        re.compile(r"Using (?:default )?backend AttentionBackendEnum\.(\w+) for vit attention"),
        _set("vit_backend"),
    ),
    (
        re.compile(r"Using (\w+) attention backend out of potential backends"),
        _set("attention_backend"),
    ),
    (
        re.compile(r"Using (?:backend )?AttentionBackendEnum\.(\w+) backend\b(?! for)"),
        _set("attention_backend"),
    ),
    (re.compile(r"Using ([\w -]+?) backend(?: on V1 engine)?\.?$"), _old_attention),
    (
        re.compile(r"Using '?([\w ]+?)'? (?:[\w-]+ )?MoE backend out of potential backends"),
        _set("moe_backend", _backend),
    ),
    (
        re.compile(r"Using '?([\w ]+?)'? backend for (?:[\w-]+ )?MoE\b"),
        _set("moe_backend", _backend),
    ),
    (re.compile(r"Using (\w*PrepareAndFinalize\w*)"), _set("prepare_finalize")),
    (re.compile(r"prepare_finalize[=:]\s*(\w*PrepareAndFinalize\w*)"), _set("prepare_finalize")),
    (re.compile(r"(\d+) SMs used for MoE,? (\d+) SMs? reserved"), _sm_split),
    (re.compile(r"GPU KV cache size: ([\d,]+) tokens"), _set("kv_cache_tokens", _int)),
    (
        re.compile(r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x"),
        _set("max_concurrency", float),
    ),
    (re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)"), _chunked),
    (
        re.compile(r"Capturing CUDA graphs?|Graph capturing finished|Capturing cudagraphs"),
        _graphs("graphs"),
    ),
    (
        re.compile(
            r"Enforce eager set|Cudagraph is disabled under eager mode"
            r"|CUDA ?graphs? (?:is|are) disabled|cudagraph capturing is disabled"
        ),
        _graphs("eager"),
    ),
    (
        re.compile(r"Encoder cache will be initialized with a budget of ([\d,]+) tokens"),
        _set("encoder_cache_budget", _int),
    ),
    (
        re.compile(r"Reducing Torch parallelism from \d+ threads to (\d+)"),
        _set("omp_num_threads", int),
    ),
    (re.compile(r"\bOMP_NUM_THREADS[=:]\s*'?(\d+)"), _set("omp_num_threads", int)),
    (re.compile(r"Unknown vLLM environment variable detected: (\w+)"), _add("unknown_env_vars")),
    (re.compile(r"^Total num prompt tokens: +([\d,]+)"), _set("prompt_tokens", _int)),
    (re.compile(r"^Total num output tokens: +([\d,]+)"), _set("output_tokens", _int)),
    (
        re.compile(r"Across all generated prompts, there were ([\d,]+) (more|fewer) tokens"),
        _mismatch,
    ),
    (re.compile(r"^- (\S+) -> \S+"), _add("plugins")),
    (re.compile(r"^name=(\S+), value=\S+"), _add("plugins")),
    (re.compile(r"(?:Loading plugin|plugin) (\S+?)(?: loaded)?\.?$"), _add("plugins_loaded")),
)


def parse_lines(lines: list[str]) -> Fingerprint:
    """Fingerprint from already-read lines (tests, short logs)."""
    out: dict[str, Any] = {}
    startup = TimelineBuilder()
    for i, raw in enumerate(lines, 1):
        startup.line(raw)
        _apply(out, normalise(raw, i).text)
    return _build(out, startup)


def fingerprint_file(path: Path) -> Fingerprint:
    """Parse what a run actually did from its log (streamed)."""
    out: dict[str, Any] = {}
    startup = TimelineBuilder()

    def feed(number: int, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace")
        startup.line(text)
        _apply(out, normalise(text, number).text)

    try:
        with open(path, "rb") as fh:
            for raw_line in fh.read(_HEAD_BYTES).splitlines():
                startup.line(raw_line.decode("utf-8", "replace"))
                if startup.first_log is not None:
                    break
        scan(path, feed, lambda: False, MARKERS, anywhere=None)
    except OSError as exc:
        raise VllmdiagError(
            f"cannot read the log: {exc.strerror or exc}",
            where=str(path),
            hint="give the path of a captured run log",
        ) from None
    except zlib.error as exc:
        raise VllmdiagError(
            f"the log looks gzip'd but does not decompress: {exc}",
            where=str(path),
            hint="check the file is whole (gzip -t), or give the uncompressed log",
        ) from None
    return replace(_build(out, startup), path=str(path))


def _apply(out: dict[str, Any], text: str) -> None:
    if text.startswith(("Traceback", "  File ")):
        return
    for pattern, setter in RULES:
        m = pattern.search(text)
        if m:
            setter(out, m)


def _build(out: dict[str, Any], startup: TimelineBuilder | None = None) -> Fingerprint:
    graphs = out.get("cuda_graphs")
    eager = out.get("enforce_eager")
    if graphs is None and eager is True:
        graphs = "eager"
    attention = out.get("attention_backend")
    mm = out.get("mm_encoder_attention_backend") or out.get("vit_backend")
    moe = out.get("moe_backend")
    if moe is None and out.get("moe_backend_requested") not in (None, "auto", "None"):
        moe = str(out["moe_backend_requested"]).upper()
    plugins = list(out.get("plugins", []))
    plugins += [p for p in out.get("plugins_loaded", []) if p not in plugins]
    return Fingerprint(
        vllm_version=out.get("vllm_version"),
        model=out.get("model"),
        tensor_parallel_size=out.get("tensor_parallel_size"),
        attention_backend=attention,
        mm_encoder_attention_backend=mm,
        moe_backend=moe,
        prepare_finalize=out.get("prepare_finalize"),
        moe_sm_split=out.get("moe_sm_split"),
        kv_cache_tokens=out.get("kv_cache_tokens"),
        max_concurrency=out.get("max_concurrency"),
        chunked_prefill=out.get("chunked_prefill"),
        max_num_batched_tokens=out.get("max_num_batched_tokens"),
        cuda_graphs=graphs,
        enforce_eager=eager,
        gpu_memory_utilization=out.get("gpu_memory_utilization"),
        encoder_cache_budget=out.get("encoder_cache_budget"),
        omp_num_threads=out.get("omp_num_threads"),
        unknown_env_vars=tuple(out.get("unknown_env_vars", [])),
        plugins=tuple(plugins),
        workload=_workload(out),
        startup=startup.build() if startup is not None else None,
    )


def _workload(out: dict[str, Any]) -> WorkloadShape | None:
    if out.get("prompt_tokens") is None and out.get("output_tokens") is None:
        return None
    return WorkloadShape(
        prompt_tokens=out.get("prompt_tokens"),
        output_tokens=out.get("output_tokens"),
        stated_mismatch=out.get("stated_mismatch", 0),
    )
