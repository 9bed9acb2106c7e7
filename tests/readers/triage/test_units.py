"""Pure pieces of triage: line normalisation, masking, the traceback state machine."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from vllmdiag.readers.triage.lines import normalise
from vllmdiag.readers.triage.signature import mask, signature
from vllmdiag.readers.triage.traceback_model import HEAD_LINKS, TAIL_LINKS
from vllmdiag.readers.triage.tracebacks import Traceback, TracebackParser
from vllmdiag.services import proc


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
        (  # docker compose's service column
            "eap-llm-server  | ERROR 11-08 11:01:29 [multiproc_executor.py:135] Worker proc x",
            "main",
            "ERROR",
            "Worker proc x",
        ),
        (  # torch's rank prefix and glog (c10) logger
            "[rank2]:[E1001 16:06:04.537131842 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog",
            "rank2",
            None,
            "[Rank 2] Watchdog",
        ),
        (  # kubectl --timestamps, Ray actor, V0 logger
            "2024-06-28T06:11:52.685302801Z (LLMRayActor pid=20770) ERROR 06-28 06:11:45 "
            "worker_base.py:145] Error executing method initialize_cache.",
            "LLMRayActor pid=20770",
            "ERROR",
            "Error executing method initialize_cache.",
        ),
        (  # a k9s pane
            "│ ERROR 09-27 06:46:46 engine.py:157] RuntimeError: CUDA error      │",
            "main",
            "ERROR",
            "RuntimeError: CUDA error",
        ),
        (  # colours pasted as ^[[ and a leading space
            " ^[[1;36m(EngineCore_DP0 pid=6444)^[[0;0m     super().__init__()",
            "EngineCore_DP0 pid=6444",
            None,
            "    super().__init__()",
        ),
        (  # the escape byte lost on the way into an issue
            " [36m(RayWorkerVllm pid=4773) [0m [E ProcessGroupNCCL.cpp:474] [Rank 1] x",
            "RayWorkerVllm pid=4773",
            None,
            "[Rank 1] x",
        ),
        (  # dynamo's logger, with a capture timestamp whose head the paste cut
            "025-06-12T11:14:08.162Z ERROR multiproc_worker_utils.run: Worker died   ",
            "main",
            None,
            "Worker died",
        ),
        (  # vllm-ascend's logger, its location suffix dropped
            "[2026-08-22 13:05:18.630086][UC][E] Worker proc VllmWorker-14 died unexpectedly."
            " [416204,434190][multiproc_executor.py:295,monitor_workers]",
            "main",
            None,
            "Worker proc VllmWorker-14 died unexpectedly.",
        ),
        (  # nested tags: the innermost names the process
            "(EngineCore_DP0 pid=1305) (RayWorkerWrapper pid=344, ip=10.2.30.130) ERROR "
            "12-12 22:31:21 [worker_base.py:275]   File",
            "RayWorkerWrapper pid=344",
            "ERROR",
            "  File",
        ),
        (  # dynamo's logger, the paste indented
            "    2025-06-06T19:02:34.252Z DEBUG dynamo_run::subprocess:     raise e",
            "main",
            None,
            "    raise e",
        ),
        (  # a frame under docker's timestamp keeps its indentation
            '2026-09-21T04:02:11.482113Z   File "/v/x.py", line 1, in f',
            "main",
            None,
            '  File "/v/x.py", line 1, in f',
        ),
        (  # a markdown quote around a frame line
            '>   File "/v/x.py", line 1, in f',
            "main",
            None,
            '  File "/v/x.py", line 1, in f',
        ),
        (  # journald
            "Jan 28 10:40:07 localhost bash[367371]: RuntimeError: Engine process failed",
            "main",
            None,
            "RuntimeError: Engine process failed",
        ),
        (  # a log line without a date
            "(Worker_TP0 pid=123) ERROR [multiproc_executor.py:751] ValueError: To serve",
            "Worker_TP0 pid=123",
            "ERROR",
            "ValueError: To serve",
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
    fixture = FIXTURES / "logs" / "b200_018_whisper_thrmma.log"
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
        "from vllmdiag.readers.triage import triage_file\n"
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
    from vllmdiag.readers.triage import Catalogue
    from vllmdiag.services.config import load_arm_library

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
def test_catalogue_knows_the_ablation_s_errors(text: str, known: str) -> None:
    from vllmdiag.readers.triage import Catalogue

    typ, _, msg = text.partition(": ")
    hit = Catalogue.load(use_env=False).match(signature(typ, msg), text)
    assert hit is not None and hit.name == known


def test_signal_at_the_end_of_a_long_log(tmp_path: Path) -> None:
    from vllmdiag.readers.triage import triage_file

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


def _parse(text: str) -> list[Traceback]:
    parser = TracebackParser()
    for i, raw in enumerate(text.splitlines(), 1):
        parser.feed(normalise(raw, i))
    return parser.finish()


def test_an_exception_line_without_its_header_is_read_with_the_frames_above() -> None:
    tbs = _parse(
        "    return func(*args, **kwargs)\n"
        '  File "/v/site-packages/vllm/v1/worker/gpu_model_runner.py", line 1548, in run\n'
        "    raise RuntimeError(\n"
        "RuntimeError: CUDA out of memory occurred when warming up sampler\n"
    )
    assert len(tbs) == 1 and tbs[0].headless and tbs[0].complete
    link = tbs[0].links[0]
    assert (link.type, link.message) == (
        "RuntimeError",
        "CUDA out of memory occurred when warming up sampler",
    )
    assert [f.file for f in link.frames] == ["/v/site-packages/vllm/v1/worker/gpu_model_runner.py"]


def test_plain_lines_are_not_taken_for_exceptions() -> None:
    assert _parse("INFO: 127.0.0.1 - GET /health\nNote: nothing\nKilled\nNCCL: x\n") == []


def test_detail_lines_of_one_record_belong_to_the_message() -> None:
    tbs = _parse(
        "torch.distributed.DistBackendError: NCCL error in: x.hpp:268, unhandled cuda error\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "Last error:\n"
        "Cuda failure 1 'invalid argument'\n"
        "\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
    )
    assert tbs[0].links[0].message == (
        "NCCL error in: x.hpp:268, unhandled cuda error ncclUnhandledCudaError: Call to "
        "CUDA function failed. Last error: Cuda failure 1 'invalid argument'"
    )
    logged = _parse(
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] RuntimeError: boom\n"
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] detail of boom\n"
        "(EngineCore pid=1) INFO 01-01 00:00:01 [core.py:9] unrelated record\n"
    )
    assert logged[0].links[0].message == "boom detail of boom"


def test_v0_worker_notice_keeps_its_message_when_the_traceback_is_cut() -> None:
    p = "(VllmWorkerProcess pid=87) ERROR 07-19 10:59:03 multiproc_worker_utils.py:226] "
    tbs = _parse(
        f"{p}Exception in worker VllmWorkerProcess while processing method load: NCCL error\n"
        f"{p}Last error:\n"
        f"{p}shm segment too small, Traceback (most recent call last):\n"
        f'{p}  File "/v/vllm/executor/multiproc_worker_utils.py", line 223, in _run\n'
    )
    notice = [t for t in tbs if t.links[0].kind == "notice"]
    assert len(notice) == 1
    assert notice[0].links[0].message == "NCCL error Last error: shm segment too small"
    assert notice[0].process == "VllmWorkerProcess pid=87"


def test_a_chain_keeps_its_original_and_its_last_links_in_flat_memory() -> None:
    one = (
        "Traceback (most recent call last):\n"
        '  File "/srv/h.py", line {i}, in h\n'
        "ValueError: link {i}\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
    )
    text = "".join(one.format(i=i) for i in range(1000)) + (
        'Traceback (most recent call last):\n  File "/srv/m.py", line 1, in m\nKeyError: end\n'
    )
    (tb,) = _parse(text)
    assert tb.links[0].message == "link 0" and tb.links[-1].message == "end"
    assert len(tb.links) == HEAD_LINKS + TAIL_LINKS
    assert tb.dropped_links == 1001 - len(tb.links)


@pytest.mark.slow
def test_long_chain_and_a_fatal_line_mid_file_in_flat_memory(tmp_path: Path) -> None:
    """A 100k-link chain, then 64 MiB of healthy ranks around one worker's death line: the
    death is found in the middle, the chain costs no memory per link."""
    log = tmp_path / "big.log"
    noise = (
        b"(Worker_TP0 pid=11) INFO 09-21 03:12:13 [loggers.py:123] Engine 000: Avg prompt "
        b"throughput: 0.0 tokens/s, Running: 128 reqs, GPU KV cache usage: 12.3%\n"
    ) * 20000
    with open(log, "wb") as fh:
        for i in range(100_000):
            fh.write(
                b"Traceback (most recent call last):\n"
                b'  File "/srv/app/handler.py", line %d, in handle\n'
                b"KeyboardInterrupt\n\n"
                b"During handling of the above exception, another exception occurred:\n\n" % i
            )
        fh.write(b"Traceback (most recent call last):\nKeyboardInterrupt\n")
        for i in range(40):
            fh.write(noise)
            if i == 20:
                fh.write(
                    b"(EngineCore_DP0 pid=7) ERROR 09-21 03:12:14 [multiproc_executor.py:154] "
                    b"Worker proc VllmWorker-2 died unexpectedly, shutting down executor.\n"
                )
    code = (
        "import re, sys, json\n"
        "from pathlib import Path\n"
        "from vllmdiag.readers.triage import triage_file\n"
        "def hwm():\n"
        "    return int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1])\n"
        "before = hwm()\n"
        "rc = triage_file(Path(sys.argv[1])).root_cause\n"
        "print(json.dumps({'msg': rc.message, 'process': rc.process, 'evidence': rc.evidence,"
        " 'grew_kib': hwm() - before}))\n"
    )
    done = proc.run([sys.executable, "-c", code, str(log)], capture=True, timeout=600)
    assert done.ok, done.stderr
    out = json.loads(done.stdout)
    # the interrupts are follow-on errors: the death line in the middle is the cause
    assert out["msg"].startswith("Worker proc VllmWorker-2 died unexpectedly"), out
    assert (out["process"], out["evidence"]) == ("VllmWorker-2", "death-line")
    assert out["grew_kib"] < 32 * 1024, out
