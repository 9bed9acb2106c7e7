"""What a workload wrote, read back after its cell: its metrics (from a JSON file it
writes or a regex over its log, never a silent zero), the seconds its benchmark timed,
and the totals ``vllm bench serve`` prints. Files are read bounded (a regular file only,
a log block by block, each metric regex under a time budget)."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.model.recipe import MetricSpec, WorkloadConfig
from vllmdiag.model.shape import WorkloadShape
from vllmdiag.plan import bench_command as benchmod
from vllmdiag.plan.workloads import bench_json
from vllmdiag.services.regexguard import RegexTimeout, time_limit

_SERVE_DURATION = re.compile(r"^Benchmark duration \(s\):\s+([\d.]+)", re.M)


def timed_region(wl: WorkloadConfig, argv: Sequence[str], out_dir: Path, log: Path) -> float | None:
    """Seconds the benchmark timed: ``elapsed_time`` of the throughput JSON, or the
    ``Benchmark duration (s):`` line of ``vllm bench serve``. None: not a timed region
    vllmdiag knows (latency times each batch on its own)."""
    path = bench_json(wl, argv, out_dir)
    if path is not None:
        value, _ = json_number(path, "elapsed_time")
        return value
    bench = benchmod.parse(argv) if wl.command is not None else None
    if bench is not None and bench.kind == benchmod.SERVE and log.exists():
        found = _SERVE_DURATION.findall(log.read_text(encoding="utf-8", errors="replace"))
        return float(found[-1]) if found else None
    return None


_SERVE_TOTALS = {
    "num_prompts": re.compile(r"^Successful requests:\s+(\d+)", re.M),
    "prompt_tokens": re.compile(r"^Total input tokens:\s+(\d+)", re.M),
    "output_tokens": re.compile(r"^Total generated tokens:\s+(\d+)", re.M),
}


def serve_shape(log: Path) -> WorkloadShape | None:
    """The totals ``vllm bench serve`` prints (its result block), or None."""
    if not log.exists():
        return None
    text = log.read_text(encoding="utf-8", errors="replace")
    found = {k: r.findall(text) for k, r in _SERVE_TOTALS.items()}
    if not any(found.values()):
        return None
    last = {k: int(v[-1]) if v else None for k, v in found.items()}
    return WorkloadShape(last["num_prompts"], last["prompt_tokens"], last["output_tokens"])


@dataclass(frozen=True)
class MissingMetric:
    """A metric the workload did not yield, and why (never a silent zero)."""

    name: str
    why: str

    def __str__(self) -> str:
        return f"{self.name}: {self.why}"


def extract(
    specs: Sequence[MetricSpec], out_dir: Path, log: Path
) -> tuple[dict[str, float], tuple[MissingMetric, ...]]:
    """Values of ``specs`` and, for those not found, why."""
    found: dict[str, float] = {}
    missing: list[MissingMetric] = []
    for spec in specs:
        if spec.json_file is not None:
            value, why = _from_json(out_dir / spec.json_file, spec.key or "")
        else:
            value, why = _from_regex(log, spec.regex or "")
        if value is None:
            missing.append(MissingMetric(spec.name, why))
        else:
            found[spec.name] = value
    return found, tuple(missing)


def json_number(path: Path, key: str) -> tuple[float | None, str]:
    """A number at ``key`` (dotted) in a JSON file a workload wrote, or why not."""
    return _from_json(path, key)


def _from_json(path: Path, key: str) -> tuple[float | None, str]:
    raw, why = _bounded_read(path, MAX_JSON_BYTES)
    if raw is None:
        return None, why
    try:
        data: object = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        return None, f"{path.name} is not JSON ({str(exc)[:200]})"
    for part in key.split("."):
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None, f"{path.name} has no key {key!r}"
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        return None, f"{path.name}:{key} is not a number ({data!r})"
    return float(data), ""


def _from_regex(log: Path, regex: str) -> tuple[float | None, str]:
    """The last match of ``regex`` in the log, read block by block (whole lines; memory
    stays one block), each block's search under the regex guard's time budget."""
    pattern = re.compile(regex, re.MULTILINE)
    last: re.Match[str] | None = None
    try:
        for block in _line_blocks(log):
            with time_limit(REGEX_BUDGET_S):
                for m in pattern.finditer(block):
                    last = m
    except RegexTimeout:
        return None, f"the regex {regex!r} ran past {REGEX_BUDGET_S:g}s on a block of the log"
    if last is None:
        return None, f"no line of the log matches {regex!r}"
    raw = last.group(1).replace(",", "")
    try:
        return float(raw), ""
    except ValueError:
        return None, f"{raw!r} matched {regex!r} but is not a number"


#: A workload's JSON output is kilobytes; far above that is not its metrics file.
MAX_JSON_BYTES = 64 << 20
#: Seconds a metric regex may take over one block of a log.
REGEX_BUDGET_S = 5.0
_BLOCK = 4 << 20


def _bounded_read(path: Path, limit: int) -> tuple[bytes | None, str]:
    """A regular file's bytes up to ``limit``, or why not (never a device or a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, f"{path.name} was not written"
    except OSError as exc:
        return None, f"{path.name} cannot be read ({exc.strerror})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"{path.name} is not a regular file"
        if st.st_size > limit:
            return None, f"{path.name} is larger than {limit >> 20} MiB"
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        return None, f"{path.name} cannot be read ({exc.strerror})"
    finally:
        os.close(fd)
    if len(data) > limit:
        return None, f"{path.name} is larger than {limit >> 20} MiB"
    return data, ""


def _line_blocks(log: Path) -> Iterator[str]:
    """The log's text in blocks of whole lines (a line longer than a block is cut)."""
    try:
        fd = os.open(log, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO would block, /dev/zero not end
            return
        carry = b""
        while chunk := fh.read(_BLOCK):
            data = carry + chunk
            cut = data.rfind(b"\n")
            if cut == -1:
                carry = data[-_BLOCK:]
                continue
            carry = data[cut + 1 :]
            yield data[: cut + 1].decode("utf-8", "replace")
        if carry:
            yield carry.decode("utf-8", "replace")
