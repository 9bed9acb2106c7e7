"""Workloads: command templates rendered into argv, the shape a cell must take, and
where a benchmark writes its JSON (what a workload wrote is read back by
:mod:`vllmdiag.readers.workload_output`).

Built-ins drive vLLM's own CLI (checked against ``vllm/benchmarks/{throughput,latency}.py``
of 0.18–0.29): ``vllm bench throughput`` on the random dataset with ``--output-json``,
``vllm bench latency --output-json``, and a start-and-generate smoke check run by the
leg's python. Any other command is allowed.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from vllmdiag import probes
from vllmdiag.errors import ConfigError
from vllmdiag.model.arms import Flag
from vllmdiag.model.recipe import PLACEHOLDERS, Builtin, MetricSpec, WorkloadConfig
from vllmdiag.model.shape import ShapeAsked
from vllmdiag.plan import bench_command as benchmod
from vllmdiag.plan.bench_command import CURRENT, PLAIN_LENGTHS, BenchDialect

__all__ = ["CURRENT", "PLACEHOLDERS", "PLAIN_LENGTHS", "BenchDialect"]

THROUGHPUT_JSON = "throughput.json"
LATENCY_JSON = "latency.json"

#: Metrics a built-in always records (the recipe's own ``metrics`` decide the verdict).
BUILTIN_METRICS: dict[Builtin, tuple[MetricSpec, ...]] = {
    Builtin.THROUGHPUT: (
        MetricSpec(name="tokens_per_second", json=THROUGHPUT_JSON, key="tokens_per_second"),
        MetricSpec(name="requests_per_second", json=THROUGHPUT_JSON, key="requests_per_second"),
        MetricSpec(
            name="output_tokens_per_second", regex=r"Throughput: .*?([\d.]+) output tokens/s"
        ),
        MetricSpec(name="elapsed_time", json=THROUGHPUT_JSON, key="elapsed_time", better="lower"),
    ),
    Builtin.LATENCY: (
        MetricSpec(name="avg_latency", json=LATENCY_JSON, key="avg_latency", better="lower"),
        MetricSpec(name="p50_latency", json=LATENCY_JSON, key="percentiles.50", better="lower"),
        MetricSpec(name="p99_latency", json=LATENCY_JSON, key="percentiles.99", better="lower"),
    ),
    Builtin.SMOKE: (),
}


def template(wl: WorkloadConfig, dialect: BenchDialect = CURRENT) -> list[str]:
    """The argv template of a workload, placeholders still in."""
    if wl.command is not None:
        return shlex.split(wl.command) if isinstance(wl.command, str) else list(wl.command)
    assert wl.builtin is not None
    if wl.builtin is Builtin.THROUGHPUT:
        prefix = "--random-" if dialect.random_lengths else "--"
        return [
            "vllm",
            "bench",
            "throughput",
            "--model",
            "{model}",
            "--dataset-name",
            "random",
            f"{prefix}input-len",
            str(wl.input_len),
            f"{prefix}output-len",
            str(wl.output_len),
            "--num-prompts",
            str(wl.num_prompts),
            "--output-json",
            "{out_dir}/" + THROUGHPUT_JSON,
            *wl.args,
            "{flags}",
        ]
    if wl.builtin is Builtin.LATENCY:
        return [
            "vllm",
            "bench",
            "latency",
            "--model",
            "{model}",
            "--input-len",
            str(wl.input_len),
            "--output-len",
            str(wl.output_len),
            "--batch-size",
            str(wl.batch_size),
            "--output-json",
            "{out_dir}/" + LATENCY_JSON,
            *wl.args,
            "{flags}",
        ]
    return ["{python}", str(probes.script("vllm_smoke")), "--model", "{model}", *wl.args, "{flags}"]


def render(
    wl: WorkloadConfig,
    *,
    name: str,
    flags: Sequence[Flag],
    out_dir: Path,
    recipe_dir: Path,
    python: Path,
    dialect: BenchDialect = CURRENT,
) -> list[str]:
    """argv for one cell. ``{flags}`` as a whole token expands to the flags' tokens."""
    values = {
        "model": wl.model or "",
        "out_dir": str(out_dir),
        "recipe_dir": str(recipe_dir),
        "python": str(python),
    }
    flag_tokens = [t for f in flags for t in f.argv()]
    tokens = template(wl, dialect)
    argv: list[str] = []
    for token in tokens:
        if token == "{flags}":
            argv.extend(flag_tokens)
            continue
        try:
            argv.append(token.format(**values, flags=" ".join(flag_tokens)))
        except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
            raise ConfigError(
                f"workloads.{name}.command: bad placeholder in {token!r} ({exc})",
                hint="placeholders are "
                + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                + "; write {{ and }} for literal braces",
            ) from None
    if flag_tokens and "{flags}" not in tokens:
        raise ConfigError(
            f"workloads.{name}.command has no {{flags}} placeholder but the cell has flags "
            f"({' '.join(flag_tokens)})",
            hint="add {flags} where the command takes its options, or the flag arm would "
            "silently do nothing",
        )
    return argv


_SHAPE_FIELDS = ("num_prompts", "input_len", "output_len")
#: A timed region shorter than this is dominated by first-call effects on a fresh engine.
MIN_TIMED_S = 10.0


def asked_shape(
    wl: WorkloadConfig, argv: Sequence[str], dialect: BenchDialect = CURRENT
) -> ShapeAsked | None:
    """The shape a cell must take: the throughput built-in's; a command workload's
    ``num_prompts`` / ``input_len`` / ``output_len`` where it declares them, else what
    its ``vllm bench throughput|serve`` command line asks (the lengths as written,
    whichever spelling: vLLM running others is the error the check exists for). None:
    nothing asked."""
    if wl.builtin is Builtin.THROUGHPUT:
        ratio = benchmod.range_ratio(_option(argv, "--random-range-ratio"))
        return _asked(wl.num_prompts, wl.input_len, wl.output_len, ratio)
    if wl.command is None:
        return None
    given: dict[str, int | None] = {
        f: getattr(wl, f) for f in _SHAPE_FIELDS if f in wl.model_fields_set
    }
    bench = benchmod.parse(argv, dialect)
    if bench is None or bench.kind == benchmod.LATENCY:  # latency prints no totals
        if not given:
            return None
        ratio = benchmod.range_ratio(_option(argv, "--random-range-ratio"))
        return _asked(
            given.get("num_prompts"), given.get("input_len"), given.get("output_len"), ratio
        )
    asked: dict[str, int | None] = {
        "num_prompts": bench.num_prompts,
        "input_len": bench.asked_input,
        "output_len": bench.asked_output,
    }
    asked.update(given)
    if bench.dataset in benchmod.NO_PROMPT_CHECK:
        asked["input_len"] = None  # its prompt totals count image tokens and a template
    if not any(v is not None for v in asked.values()):
        return None
    return _asked(asked["num_prompts"], asked["input_len"], asked["output_len"], bench.range_ratio)


def _asked(
    n: int | None, per_in: int | None, per_out: int | None, ratio: tuple[float, float]
) -> ShapeAsked:
    """One range ratio for both lengths, or an input and an output one."""
    out_ratio = None if ratio[1] == ratio[0] else ratio[1]
    return ShapeAsked(n, per_in, per_out, ratio[0], out_ratio)


def _option(argv: Sequence[str], name: str) -> str | None:
    opts = benchmod.options(argv)
    return opts.get(name)


def bench_json(wl: WorkloadConfig, argv: Sequence[str], out_dir: Path) -> Path | None:
    """The JSON a throughput benchmark writes: a ``vllm bench throughput`` command's
    ``--output-json``, else the built-in's name in the cell's output directory (a
    command of the recipe's own may write it); None for latency and serve."""
    if wl.builtin is not None and wl.builtin is not Builtin.THROUGHPUT:
        return None
    bench = benchmod.parse(argv) if wl.command is not None else None
    if bench is not None and bench.kind != benchmod.THROUGHPUT:
        return None
    if bench is not None and bench.output_json:
        return Path(bench.output_json)
    return out_dir / THROUGHPUT_JSON


def short_region(seconds: float | None) -> str | None:
    """The warning for a timed region too short to time, or None."""
    if seconds is None or seconds >= MIN_TIMED_S:
        return None
    return (
        f"the timed region lasted {seconds:.1f} s (under {MIN_TIMED_S:.0f} s): on a fresh "
        "engine first-call effects (compilation, warm-up, allocator growth) dominate it, so "
        "its throughput is not a steady-state figure; lengthen it with more prompts "
        "(--num-prompts) or more output tokens per prompt (--random-output-len / "
        "output_len)"
    )


def specs_for(wl: WorkloadConfig, recipe_metrics: Sequence[MetricSpec]) -> tuple[MetricSpec, ...]:
    own = wl.metrics or tuple(recipe_metrics)
    builtin = BUILTIN_METRICS.get(wl.builtin, ()) if wl.builtin else ()
    names = {m.name for m in own}
    return (*own, *(m for m in builtin if m.name not in names))
