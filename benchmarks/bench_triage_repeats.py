"""``triage`` of a gzip'd log that is one traceback repeated (a crash loop, every
rank's copy), against the same reader peeling every line afresh, in one run.

    python benchmarks/bench_triage_repeats.py [--mib 512]

The log is the traceback of ``tests/fixtures/logs/b200_018_whisper_thrmma.log`` written
again and again to ``--mib`` MiB and gzip'd (level 6). Each way runs in a fresh child:
wall time and peak RSS; both must name the same root cause. The figure for a 4 GiB log
(the case that took about 20 minutes) is scaled linearly from the measured size: the
reader streams, so time is linear in the lines.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vllmdiag.services import proc  # noqa: E402

LOG = REPO / "tests" / "fixtures" / "logs" / "b200_018_whisper_thrmma.log"

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {repo!r})
from vllmdiag.readers.triage import lines, triage_file
if {naive}:
    lines._CACHED_LINE = -1  # every line peeled afresh
start = time.monotonic()
t = triage_file({path!r})
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"s": time.monotonic() - start, "peak_mb": peak / 1024,
                   "cause": t.root_cause.signature if t.root_cause else None}}))
"""


def write_log(path: Path, mib: int) -> None:
    raw = LOG.read_bytes()
    block = raw[raw.index(b"Traceback (most recent call last)") :]
    with gzip.open(path, "wb", compresslevel=6) as f:
        written = 0
        while written < mib << 20:
            f.write(block)
            written += len(block)


def run(path: Path, naive: bool) -> dict[str, object]:
    code = CHILD.format(repo=str(REPO), path=str(path), naive=naive)
    done = proc.run([sys.executable, "-c", code], capture=True, timeout=7200)
    if not done.ok:
        raise SystemExit(done.stderr[-2000:])
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "tracebacks.log.gz"
        write_log(path, args.mib)
        size = path.stat().st_size
        fast, naive = run(path, naive=False), run(path, naive=True)
    assert fast["cause"] == naive["cause"], (fast, naive)
    scale = 4096 / args.mib
    for label, r in (("triage", fast), ("every line peeled", naive)):
        secs = float(r["s"])  # type: ignore[arg-type]
        print(f"{label}: {args.mib} MiB ({size / 2**20:.1f} MiB gzip'd) in {secs:.1f} s, "
              f"{r['peak_mb']:.0f} MB peak; 4 GiB scaled: {secs * scale:.0f} s")  # fmt: skip
    print(f"root cause: {fast['cause']}")


if __name__ == "__main__":
    main()
