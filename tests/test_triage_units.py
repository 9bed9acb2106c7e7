"""Pure pieces of triage: line normalisation, masking, the traceback state machine."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vllmdiag import proc
from vllmdiag.triage.lines import normalise
from vllmdiag.triage.signature import mask, signature


@pytest.mark.parametrize(
    ("raw", "process", "level", "text"),
    [
        (
            "\x1b[1;36m(EngineCore_DP0 pid=143)\x1b[0;0m INFO 03-18 14:04:03 [core.py:93] hi",
            "EngineCore_DP0 pid=143",
            "INFO",
            "hi",
        ),
        (
            "(Worker_TP7_EP7 pid=2894) ERROR 02-03 19:11:07 [multiproc_executor.py:707]   File",
            "Worker_TP7_EP7 pid=2894",
            "ERROR",
            "  File",
        ),
        (
            "(RayWorkerWrapper pid=7106, ip=10.0.0.2) WARNING 02-24 20:21:58 [x.py:1] w",
            "RayWorkerWrapper pid=7106",
            "WARNING",
            "w",
        ),
        (
            "2026-04-19 12:19:24.098 | (EngineCore pid=207) INFO 04-19 10:19:24 [nvfp4.py:203] m",
            "EngineCore pid=207",
            "INFO",
            "m",
        ),
        (
            "[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940)     raise e",
            "EngineCore_DP0 pid=6940",
            None,
            "    raise e",
        ),
        (
            "INFO 02-09 15:20:07 gpu_model_runner.py:918] Loading model weights took 38.9697 GB",
            "main",
            "INFO",
            "Loading model weights took 38.9697 GB",
        ),
        (
            "\x1b[32mINFO\x1b[0m \x1b[90m09-21 12:34:56\x1b[0m \x1b[90m[core.py:1]\x1b[0m new",
            "main",
            "INFO",
            "new",
        ),
        ("(Worker (TP1)) ERROR 09-21 12:34:56 [core.py:1] x", "Worker (TP1)", "ERROR", "x"),
        (
            "(VllmWorker rank=2 pid=36130) ERROR 08-21 08:26:21 [multiproc_executor.py:546] y",
            "VllmWorker rank=2 pid=36130",
            "ERROR",
            "y",
        ),
        (
            "Feb 22 06:35:27 node-7 env[2827]: (EngineCore_DP0 pid=2827) ERROR 02-22 06:35:27 "
            "[core.py:946] z",
            "EngineCore_DP0 pid=2827",
            "ERROR",
            "z",
        ),
        (
            "Traceback (most recent call last):\r",
            "main",
            None,
            "Traceback (most recent call last):",
        ),
    ],
)
def test_normalise(raw: str, process: str, level: str | None, text: str) -> None:
    line = normalise(raw, 1)
    assert (line.process, line.level, line.text) == (process, level, text)


def test_mask_keeps_names_and_hides_run_specifics() -> None:
    assert mask("model type `gemma4` on cuda:0 at 0x7f9440a4fc80 in /opt/v/x.py pid=7106") == (
        "model type `gemma4` on cuda:<n> at <addr> in <path> pid=<n>"
    )
    assert mask("actor_id=ad5a2b63ebdb1b232073aa1b03000000 took 3,061 frames") == (
        "actor_id=<id> took <n> frames"
    )
    assert signature("torch.OutOfMemoryError", "Tried to allocate 2.00 GiB") == (
        "OutOfMemoryError: Tried to allocate <n> GiB"
    )
    assert signature("ray.exceptions.RayTaskError(ValueError)", "") == "RayTaskError(ValueError)"


def test_same_failure_same_signature_across_runs() -> None:
    a = signature("ValueError", "Free memory on device cuda:0 (19.77/22.05 GiB) on startup")
    b = signature("ValueError", "Free memory on device cuda:3 (7.34/139.72 GiB) on startup")
    assert a == b


@pytest.mark.slow
def test_200_mb_log_streams_in_flat_memory(tmp_path: Path) -> None:
    """A 200 MB log with the failure at its end: memory must not grow with the file."""
    log = tmp_path / "big.log"
    filler = (
        b"(EngineCore_DP0 pid=41877) INFO 09-21 03:12:13 [loggers.py:123] Engine 000: Avg "
        b"prompt throughput: 0.0 tokens/s, Avg generation throughput: 1843.2 tokens/s, "
        b"Running: 128 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.3%\n"
    )
    block = filler * (1_048_576 // len(filler))
    fixture = Path(__file__).parent / "fixtures" / "logs" / "b200_018_whisper_thrmma.log"
    middle = (
        b"Exception in thread Thread-3 (_report_usage_worker):\n"
        b"Traceback (most recent call last):\n"
        b'  File "/v/vllm/usage/usage_lib.py", line 218, in _report_usage_once\n'
        b"    info = cpuinfo.get_cpu_info()\n"
        b"json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
    )
    with open(log, "wb") as fh:
        for i in range(200):
            fh.write(block)
            if i == 99:
                fh.write(middle)  # a harmless traceback far from either end
        fh.write(fixture.read_bytes())
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across execve, so a child forked from a
    # large test process would report the parent's size; VmHWM belongs to the new image.
    code = (
        "import re, sys, json\n"
        "from pathlib import Path\n"
        "from vllmdiag.triage import triage_file\n"
        "def hwm():\n"
        "    status = open('/proc/self/status').read()\n"
        "    return int(re.search(r'VmHWM:\\s+(\\d+)', status).group(1))\n"
        "before = hwm()\n"
        "t = triage_file(Path(sys.argv[1]))\n"
        "after = hwm()\n"
        "print(json.dumps({'known': t.root_cause.known, 'lines': t.lines,"
        " 'benign': [b.line for b in t.benign],"
        " 'grew_kib': after - before, 'peak_kib': after}))\n"
    )
    done = proc.run([sys.executable, "-c", code, str(log)], capture=True, timeout=300)
    assert done.ok, done.stderr
    out = json.loads(done.stdout)
    assert out["known"] == "cutlass-thrmma-relocation"
    per_block = block.count(b"\n")
    assert out["lines"] == 200 * per_block + 5 + fixture.read_bytes().count(b"\n")
    assert out["benign"] == [100 * per_block + 5]
    assert out["grew_kib"] < 32 * 1024, out  # a few MiB of buffers, not the file
    assert out["peak_kib"] < 200 * 1024, out


def test_catalogue_arms_exist_in_the_arm_library() -> None:
    from vllmdiag.config import load_arm_library
    from vllmdiag.triage import Catalogue

    names = {a.name for a in load_arm_library()}
    cat = Catalogue.load(use_env=False)
    assert len(cat.entries) >= 15
    for entry in cat.entries:
        assert set(entry.arms) <= names, (entry.name, entry.arms)
        assert entry.next_step and entry.meaning


@pytest.mark.parametrize(
    ("text", "known"),
    [
        (
            "AttributeError: module 'cutlass.cute.core' has no attribute 'ThrMma'",
            "cutlass-thrmma-relocation",
        ),
        (
            "AmbiguousGlobalPerLayerAttributeError: 'head_dim' is a per-layer attribute and may "
            "vary across layers. Access it via the individual layer configs instead",
            "transformers-per-layer-head-dim",
        ),
        (
            "AttributeError: module 'flashinfer.comm.mnnvl' has no attribute 'IpcSocket'",
            "flashinfer-ipcsocket-missing",
        ),
        ("ValueError: input_features contains inconsistent shapes", "whisper-inconsistent-shapes"),
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "cuda-out-of-memory",
        ),
        (
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
            "unhandled cuda error",
            "nccl-failure",
        ),
        (
            "ValueError: The checkpoint you are trying to load has model type `glm_moe_dsa` but "
            "Transformers does not recognize this architecture.",
            "transformers-unknown-model-type",
        ),
        (
            "NotImplementedError: FlashInferCutlass does not support quantization scheme "
            "QuantKey(f8e4m3fn)",
            "moe-backend-refuses-quantization",
        ),
        (
            "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method",
            "cuda-reinit-in-forked-subprocess",
        ),
        (
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: RuntimeError",
            "torch-compile-failure",
        ),
        (
            "ImportError: libcudart.so.13: cannot open shared object file: No such file",
            "missing-shared-library",
        ),
    ],
)
def test_catalogue_knows_the_seeds_errors(text: str, known: str) -> None:
    from vllmdiag.triage import Catalogue

    typ, _, msg = text.partition(": ")
    hit = Catalogue.load(use_env=False).match(signature(typ, msg), text)
    assert hit is not None and hit.name == known


def test_signal_at_the_end_of_a_long_log(tmp_path: Path) -> None:
    from vllmdiag.triage import triage_file

    log = tmp_path / "long.log"
    line = b"(EngineCore_DP0 pid=7) INFO 09-21 03:12:13 [loggers.py:123] Engine 000: Avg\n"
    with open(log, "wb") as fh:
        fh.write(
            b"(EngineCore_DP0 pid=7) INFO 09-21 03:12:09 [core.py:77] Initializing a V1 "
            b"LLM engine (v0.26.0) with config: model='m'\n"
        )
        fh.write(line * (48 * 2**20 // len(line)))  # well past both edge windows
        fh.write(b"(EngineCore_DP0 pid=7) Fatal Python error: Aborted\n")
    t = triage_file(log)
    assert t.vllm_version == "0.26.0"
    assert t.root_cause is not None
    assert (t.root_cause.type, t.root_cause.message) == ("", "Fatal Python error: Aborted")
    assert t.root_cause.known == "native-crash"
