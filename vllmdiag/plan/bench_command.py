"""What a ``vllm bench throughput|latency|serve`` command line will really run. Pure.

A length flag vLLM accepts can still be one the chosen dataset ignores, and vLLM only
says so in a warning, or not at all. Read from vLLM 0.18, 0.25, 0.26 and 0.29's own
source (``vllm/benchmarks/{throughput,latency,serve}.py`` and the datasets module,
pinned by ``tests/e2e/test_vllm_contract.py``):

- ``bench throughput``: ``--dataset-name`` defaults to ``sharegpt``; with neither
  ``--dataset-path`` nor ``--dataset``, every dataset but ``prefix_repetition`` is
  replaced by ``random`` (``random-mm`` included: the run sends no images). The random
  family (``random``, ``random-mm``, ``random-rerank``) reads ``--random-input-len`` /
  ``--random-output-len``, whose defaults (1024 / 128) win over ``--input-len`` /
  ``--output-len``. ``--num-prompts`` defaults to 1000.
- ``bench serve``: ``--dataset-name`` defaults to ``random``; ``--input-len`` /
  ``--output-len`` overwrite the dataset's own length flags (the other way round); from
  0.25 a random dataset with ``--dataset-path`` is refused (0.18 took it).
- ``bench latency``: ``--input-len`` 32, ``--output-len`` 128, ``--batch-size`` 8; it
  has no dataset and prints no token totals.

A vLLM whose random dataset predates ``--random-input-len`` reads the plain flags
(:class:`BenchDialect`, read from the leg's installed source at run time).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

THROUGHPUT, LATENCY, SERVE = "throughput", "latency", "serve"
KINDS = (THROUGHPUT, LATENCY, SERVE)
RANDOM_FAMILY = frozenset({"random", "random-mm", "random-rerank"})
#: Datasets whose prompt totals carry more than the asked text (image tokens, a chat
#: template): their prompt tokens are not checked against ``--random-input-len``.
NO_PROMPT_CHECK = frozenset({"random-mm", "random-rerank"})
RANDOM_DEFAULTS = {"input": 1024, "output": 128}
LATENCY_DEFAULTS = {"input": 32, "output": 128, "batch": 8}
DEFAULT_PROMPTS = 1000
_CLI_MODULE = "vllm.entrypoints.cli.main"


@dataclass(frozen=True)
class BenchDialect:
    """How a leg's ``vllm bench`` spells lengths (read from its source, see
    :mod:`vllmdiag.spine.runner.vllm_cli`).

    ``random_lengths``: the random dataset has ``--random-input-len`` /
    ``--random-output-len`` whose defaults win over ``--input-len`` / ``--output-len``
    (vLLM 0.18 through 0.29 at least). A leg whose vLLM lacks them takes the plain
    spelling.
    """

    random_lengths: bool = True


CURRENT = BenchDialect()
PLAIN_LENGTHS = BenchDialect(random_lengths=False)


@dataclass(frozen=True)
class BenchCommand:
    """A ``vllm bench`` command as vLLM will run it: the dataset it really uses, the
    per-prompt lengths and prompt count it really takes (None: not knowable from the
    command, e.g. a placeholder), and what in it vLLM ignores or replaces."""

    kind: str
    dataset: str | None
    dataset_asked: str | None
    num_prompts: int | None
    input_len: int | None
    output_len: int | None
    #: The lengths as the command's author wrote them, whichever spelling: what a run
    #: is checked against (vLLM may run other lengths: then the check fails loudly).
    asked_input: int | None
    asked_output: int | None
    batch_size: int | None
    output_json: str | None
    range_ratio: tuple[float, float]
    problems: tuple[str, ...]

    def describe(self) -> str:
        if self.kind == LATENCY:
            return (
                f"vllm bench latency: batch {_n(self.batch_size)} x {_n(self.input_len)} "
                f"input / {_n(self.output_len)} output tokens"
            )
        return (
            f"vllm bench {self.kind} on dataset {self.dataset or '?'}: "
            f"{_n(self.num_prompts)} prompts x {_n(self.input_len)} input / "
            f"{_n(self.output_len)} output tokens"
        )


def _n(v: int | None) -> str:
    return "?" if v is None else f"{v:,}"


def bench_kind(argv: Sequence[str]) -> tuple[str, int] | None:
    """(kind, index of its first option) where ``argv`` runs ``vllm bench KIND`` or
    ``python -m vllm.entrypoints.cli.main bench KIND``; None otherwise."""
    for i in range(1, len(argv) - 1):
        if argv[i] != "bench" or argv[i + 1] not in KINDS:
            continue
        before = argv[i - 1]
        if os.path.basename(before) == "vllm" or (
            before == _CLI_MODULE and i >= 2 and argv[i - 2] == "-m"
        ):
            return argv[i + 1], i + 2
    return None


def options(tokens: Sequence[str]) -> dict[str, str]:
    """``--name value`` / ``--name=value`` pairs as argparse reads them (the last one
    given wins; vLLM's parser takes ``_`` for ``-`` in names). A flag followed by
    another option, or last, maps to ""."""
    out: dict[str, str] = {}
    for i, token in enumerate(tokens):
        if not token.startswith("--") or token == "--":
            continue
        name, eq, value = token.partition("=")
        name = "--" + name[2:].replace("_", "-")
        if not eq:
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            value = "" if nxt.startswith("--") else nxt
        out[name] = value
    return out


def _int(opts: dict[str, str], name: str) -> tuple[bool, int | None]:
    """(given, value): value None where given as something not a number."""
    if name not in opts:
        return False, None
    try:
        return True, int(opts[name])
    except ValueError:
        return True, None


def parse(argv: Sequence[str], dialect: BenchDialect = CURRENT) -> BenchCommand | None:
    """The command as vLLM will run it, or None where ``argv`` is no ``vllm bench``."""
    found = bench_kind(argv)
    if found is None:
        return None
    kind, start = found
    opts = options(argv[start:])
    if kind == LATENCY:
        return _latency(opts)
    return _dataset_bench(kind, opts, dialect)


def _latency(opts: dict[str, str]) -> BenchCommand:
    lengths = {}
    for what, flag in (("input", "--input-len"), ("output", "--output-len"),
                       ("batch", "--batch-size")):  # fmt: skip
        given, value = _int(opts, flag)
        lengths[what] = value if given else LATENCY_DEFAULTS[what]
    problems = tuple(
        f"{flag} is not a flag of vllm bench latency (it has no dataset): use --input-len, "
        "--output-len and --batch-size"
        for flag in ("--random-input-len", "--random-output-len", "--num-prompts")
        if flag in opts
    )
    return BenchCommand(
        kind=LATENCY,
        dataset=None,
        dataset_asked=None,
        num_prompts=None,
        input_len=lengths["input"],
        output_len=lengths["output"],
        asked_input=lengths["input"],
        asked_output=lengths["output"],
        batch_size=lengths["batch"],
        output_json=opts.get("--output-json") or None,
        range_ratio=(0.0, 0.0),
        problems=problems,
    )


def _dataset_bench(kind: str, opts: dict[str, str], dialect: BenchDialect) -> BenchCommand:
    problems: list[str] = []
    asked = opts.get("--dataset-name") or None
    dataset = asked or ("sharegpt" if kind == THROUGHPUT else "random")
    has_path = bool(opts.get("--dataset-path") or opts.get("--dataset"))
    if kind == THROUGHPUT and not has_path and dataset != "prefix_repetition":
        if asked is not None and asked != "random":
            images = " and sends no images" if asked == "random-mm" else ""
            problems.append(
                f"--dataset-name {asked} without --dataset-path: vllm bench throughput "
                f"replaces it by the text-only random dataset{images} (it prints only "
                "'When dataset path is not set, it will default to random dataset'); "
                "give --dataset-path (any value: the random datasets read no file)"
            )
        dataset = "random"
    if kind == SERVE and has_path and dataset in RANDOM_FAMILY:
        problems.append(
            f"--dataset-path with --dataset-name {dataset}: vllm bench serve 0.25-0.29 "
            "stops on it ('Cannot use ... dataset with --dataset-path'); drop --dataset-path"
        )
    backend = opts.get("--backend") or "vllm"
    if kind == THROUGHPUT and dataset == "random-mm" and backend != "vllm-chat":
        problems.append(
            f"--dataset-name random-mm with --backend {backend}: vllm bench throughput "
            "0.18-0.26 builds random-mm prompts as chat messages that only --backend "
            "vllm-chat takes (--backend vllm stops on them); give --backend vllm-chat"
        )
    given_n, n = _int(opts, "--num-prompts")
    num_prompts = n if given_n else DEFAULT_PROMPTS
    lengths: dict[str, int | None] = {}
    wrote: dict[str, int | None] = {}
    for what in ("input", "output"):
        plain, rand = f"--{what}-len", f"--random-{what}-len"
        has_plain, plain_v = _int(opts, plain)
        has_rand, rand_v = _int(opts, rand)
        if dataset not in RANDOM_FAMILY:
            lengths[what] = wrote[what] = plain_v if has_plain else None
            if has_rand:
                problems.append(
                    f"{rand} is ignored by --dataset-name {dataset} (only the random "
                    "datasets read it)"
                )
            continue
        default = RANDOM_DEFAULTS[what]
        if kind == SERVE:  # serve: --input-len overwrites --random-input-len
            runs = plain_v if has_plain else rand_v if has_rand else default
            wrote[what] = runs
            if has_plain and has_rand and plain_v != rand_v:
                problems.append(
                    f"{rand} {opts[rand]} is ignored: vllm bench serve's {plain} "
                    f"{opts[plain]} overwrites it"
                )
        elif not dialect.random_lengths:
            runs = wrote[what] = plain_v if has_plain else None
        else:
            runs = rand_v if has_rand else default
            wrote[what] = rand_v if has_rand else plain_v if has_plain else default
            if has_plain and not has_rand:
                problems.append(
                    f"{plain} {opts[plain]} is ignored by --dataset-name {dataset}: vLLM "
                    f"reads {rand} (default {default}), so the run would take {default} "
                    f"{what} tokens per prompt; write {rand} {opts[plain]} instead"
                )
            elif has_plain and has_rand and plain_v != rand_v:
                problems.append(
                    f"{plain} {opts[plain]} is ignored: {rand} {opts[rand]} wins on "
                    f"--dataset-name {dataset}; drop {plain}"
                )
        lengths[what] = runs
    return BenchCommand(
        kind=kind,
        dataset=dataset,
        dataset_asked=asked,
        num_prompts=num_prompts,
        input_len=lengths["input"],
        output_len=lengths["output"],
        asked_input=wrote["input"],
        asked_output=wrote["output"],
        batch_size=None,
        output_json=opts.get("--output-json") or None,
        range_ratio=range_ratio(opts.get("--random-range-ratio")),
        problems=tuple(problems),
    )


def range_ratio(value: str | None) -> tuple[float, float]:
    """``--random-range-ratio`` as (input, output): one number for both, or vLLM 0.26's
    JSON ``{"input": x, "output": y}``; a form not understood counts as the widest range
    the dataset allows, so a check never calls a valid run wrong."""
    if value is None:
        return 0.0, 0.0
    try:
        one = _clamp(float(value))
        return one, one
    except ValueError:
        pass
    try:
        data = json.loads(value)
    except ValueError:
        return 1.0, 1.0
    if not isinstance(data, dict):
        return 1.0, 1.0
    try:
        return _clamp(float(data.get("input", 0.0))), _clamp(float(data.get("output", 0.0)))
    except (TypeError, ValueError):
        return 1.0, 1.0


def _clamp(x: float) -> float:
    return min(max(x, 0.0), 1.0)
