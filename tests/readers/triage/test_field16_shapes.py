"""Readers and blame rules for what the fifteenth held-out corpus (``fixtures/logs/field16/``)
showed: build and install output (CMake's error, pip's report without its header, an
indented exception line holding only its type), relays (Modal's runner, vllm-omni's stage,
Docker inside a platform's words, a router's status, a body a paste broke over lines, a
warning quoting a failed import), records (glog's ``[c10d]``, RunPod's worker exit), and
message families whose words say whose the failure is. Each on a minimal excerpt of the
real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause, no_cause


def test_cmakes_error_is_cmakes_and_its_message_is_on_the_line_below(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "-- Configuring incomplete, errors occurred!\n"
        "CMake Error at CMakeLists.txt:108 (message):\n"
        "  Can't find CUDA or HIP installation.\n",
    )
    assert (rc.process, rc.message, rc.evidence, rc.origin) == (
        "cmake",
        "Can't find CUDA or HIP installation.",
        "exception-line",
        "environment",
    )


def test_pips_report_without_its_header_starts_at_its_first_conflict(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "vllm 0.8.5 requires tokenizers>=0.21.1, but you have tokenizers 0.20.3 which is "
        "incompatible.\n"
        "vllm 0.8.5 requires transformers>=4.51.1, but you have transformers 4.46.3 which is "
        "incompatible.\n",
    )
    assert rc.message.startswith("vllm 0.8.5 requires tokenizers>=0.21.1")
    assert rc.message.count("requires tokenizers") == 1, "the first conflict once"
    assert (rc.evidence, rc.origin) == ("exception-line", "environment")


def test_an_indented_type_alone_takes_its_message_from_below(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '        File "/tmp/pip-build-env-x/lib/python3.10/site-packages/torch/utils/'
        'cpp_extension.py", line 387, in _check_cuda_version\n'
        "          raise RuntimeError(CUDA_MISMATCH_MESSAGE.format(v, torch.version.cuda))\n"
        "      RuntimeError:\n"
        "      The detected CUDA version (12.2) mismatches the version that was used to compile\n"
        "      PyTorch (11.7). Please make sure to use the same CUDA versions.\n",
    )
    assert (rc.type, rc.evidence, rc.origin, rc.known) == (
        "RuntimeError",
        "traceback",
        "environment",
        "cuda-toolkit-mismatches-torch",
    )
    assert rc.message.startswith("The detected CUDA version (12.2) mismatches")


def test_setup_py_run_from_a_string_is_the_librarys_not_the_users(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '    File "/tmp/pip-build-env-f/overlay/lib/python3.12/site-packages/setuptools/'
        'build_meta.py", line 313, in run_setup\n'
        "      exec(code, locals())\n"
        '    File "<string>", line 23, in <module>\n'
        "  ModuleNotFoundError: No module named 'torch'\n"
        "  error: subprocess-exited-with-error\n",
    )
    assert (rc.message, rc.origin) == ("No module named 'torch'", "environment")


def test_vllms_prefix_on_lines_a_paste_indented_still_opens_the_record(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "  ERROR 06-20 15:57:54 grpc_server.py:123] Traceback (most recent call last):\n"
        '  ERROR 06-20 15:57:54 grpc_server.py:123]   File "/opt/vllm/lib64/python3.11/'
        'site-packages/vllm_tgis_adapter/grpc/grpc_server.py", line 264, in Generate\n'
        "  ERROR 06-20 15:57:54 grpc_server.py:123]     response = self._convert_output(\n"
        "  ERROR 06-20 15:57:54 grpc_server.py:123] TypeError: TextGenerationService."
        "_convert_output() takes 3 positional arguments but 5 were given\n",
    )
    assert (rc.type, rc.evidence, rc.origin, rc.package) == (
        "TypeError",
        "traceback",
        "caller",
        "vllm_tgis_adapter",
    )


def test_a_record_relaying_the_one_above_it_leaves_that_one_the_error(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "[E504 09:02:22.426955456 socket.cpp:1023] [c10d] The client socket has timed out "
        "after 600000ms while trying to connect to (10.0.0.2, 59365).\n"
        "[E504 09:02:22.427062127 TCPStore.cpp:318] [c10d] TCP client failed to "
        "connect/validate to host 10.0.0.2:59365 - timed out (try=1, timeout=600000ms): The "
        "client socket has timed out after 600000ms while trying to connect to (10.0.0.2, "
        "59365).\n",
    )
    assert rc.message.startswith("The client socket has timed out after 600000ms")
    assert rc.origin == "environment"


def test_runpods_record_of_a_workers_exit_is_that_workers_death(tmp_path: Path) -> None:
    rc = cause(tmp_path, "0s0n9esxgd0u45[error]worker exited with exit code 136\n")
    assert (rc.evidence, rc.process, rc.message, rc.origin) == (
        "death-line",
        "0s0n9esxgd0u45",
        "worker exited with exit code 136",
        "unknown",
    )


@pytest.mark.parametrize(
    ("text", "typ", "message", "process", "origin"),
    [
        (
            "Runner failed with exception: Runner has been initializing for too long: 300 "
            "seconds\n",
            "",
            "Runner has been initializing for too long: 300 seconds",
            "main",
            "unknown",
        ),
        (
            "ERROR:vllm_omni.entrypoints.omni_llm:Stage 0 error on request 0_3846: list index "
            "out of range\n",
            "",
            "list index out of range",
            "main",
            "unknown",
        ),
        (
            "Errors occurred while bootstrapping the Model Deployment: Start Container Error: "
            "unable to start container: Error response from daemon: OCI runtime create failed: "
            "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=11.8\n",
            "",
            "Error response from daemon: OCI runtime create failed",
            "docker",
            "environment",
        ),
        (
            "WARNING 11-12 15:27:46 [interface.py:197] Failed to import from vllm._C: "
            "ModuleNotFoundError(\"No module named 'vllm._C'\")\n",
            "ModuleNotFoundError",
            "No module named 'vllm._C'",
            "main",
            "environment",
        ),
        (
            "Error: [###] {'message': '\"auto\" tool choice requires --enable-auto-tool-choice "
            "and --tool-call-parser to be set', 'type': 'BadRequestError', 'param': None, "
            "'code': 400}\n",
            "BadRequestError",
            '"auto" tool choice requires --enable-auto-tool-choice',
            "main",
            "config",
        ),
        (
            "✘ WebSocket Error: Invalid response object from API:\n"
            '\'{"object":"error","message":"Conversation roles must alternate\n'
            'user/assistant/user/assistant/...","type":"BadRequestError","param":null,'
            '"code":400}\'\n'
            "(HTTP response code was 400)\n",
            "BadRequestError",
            "Conversation roles must alternate user/assistant",
            "main",
            "config",
        ),
        (
            "2025-06-07T08:10:41.790Z ERROR camem: Failed to import vllm_ascend_C:"
            "libvllm_ascend_kernels.so: cannot open shared object file: No such file or "
            "directory\n",
            "",
            "libvllm_ascend_kernels.so: cannot open shared object file",
            "main",
            "environment",
        ),
        (
            "HTTP 400: This model's maximum context length is 65536 tokens. However, you "
            "requested 65536 output tokens and your prompt contains 121171 characters\n",
            "",
            "This model's maximum context length is 65536 tokens.",
            "main",
            "config",
        ),
    ],
)
def test_relays_no_reader_knew(
    tmp_path: Path, text: str, typ: str, message: str, process: str, origin: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.evidence, rc.process, rc.origin) == (
        typ,
        "wrapper-message",
        process,
        origin,
    )
    assert rc.message.startswith(message), rc.message


def test_a_routers_record_of_a_500_is_a_client_relaying_a_status(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/x/rllm/rllm/router/router.py", line 48, in poll_completions_openai\n'
        '    raise Exception(f"API request failed with status {response.status}")\n'
        "Exception: API request failed with status 500: Internal Server Error\n",
    )
    assert (rc.evidence, rc.origin) == ("wrapper-message", "unknown")


@pytest.mark.parametrize(
    "text",
    [
        # BuildKit's closing line wraps the build step's failure, whose error is above it
        'ERROR: failed to solve: process "/bin/sh -c pip install /workspace" did not complete '
        "successfully: exit code: 1\n",
        # crewAI asking LiteLLM about the model, handling the error and going on
        "ERROR:root:Failed to get supported params: argument of type 'NoneType' is not iterable\n",
    ],
)
def test_lines_that_did_not_end_the_run_name_no_root_cause(tmp_path: Path, text: str) -> None:
    assert no_cause(tmp_path, text).startswith("unknown:")


@pytest.mark.parametrize(
    ("text", "known", "origin"),
    [
        (
            "1. Please use Flashinfer backend for models with logits_soft_cap (i.e., Gemma-2). "
            "Otherwise, the output might be wrong. (type=value_error)\n",
            "logits-soft-cap-needs-flashinfer",
            "config",
        ),
        (
            '`tool_choice` must either be a named tool, "auto", or "none"\n',
            "request-tool-choice-value-refused",
            "config",
        ),
        (
            "container create failed: executable file `lmcache_experimental_server` not found "
            "in $PATH: No such file or directory\n",
            "container-command-not-found",
            "caller",
        ),
        (
            "ValueError: Unrecognized distributed executor backend tp. Supported values are "
            "'ray', 'mp' 'uni', 'external_launcher' or custom ExecutorBase subclass.\n",
            "setting-value-unknown",
            "config",
        ),
        (
            "ValueError: Unrecognized image processor in Qwen2.5-VL-72B-Instruct-AWQ. Should "
            "have a `image_processor_type` key in its preprocessor_config.json of config.json\n",
            "transformers-class-missing",
            "environment",
        ),
        (
            "TimeoutError: Orchestrator did not become ready within 600s\n",
            "start-up-readiness-timeout",
            "unknown",
        ),
        (
            'Error: admission webhook "warden-validating.common-webhooks.networking.gke.io" '
            "denied the request: GKE Warden rejected the request\n",
            "kubernetes-admission-denied",
            "config",
        ),
        (
            'Error: INSTALLATION FAILED: chart "production-stack" matching not found in vllm '
            "index. (try 'helm repo update'): no chart name found\n",
            "helm-chart-not-found",
            "config",
        ),
    ],
)
def test_messages_that_say_whose_they_are(
    tmp_path: Path, text: str, known: str, origin: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.known, rc.origin) == (known, origin)


def test_vllms_data_parallel_metadata_is_one_of_its_internal_classes(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "AttributeError: 'DPMetadata' object has no attribute 'cu_tokens_across_dp_cpu'\n",
    )
    assert rc.origin == "vllm"


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("vllm_6762_cmake_cant_find_cuda_or_hip.log", "exception-line", "environment"),
        ("vllm_1060_cuda_version_mismatch_pytorch_build.log", "traceback", "environment"),
        ("vllm_6200_xformers_build_no_module_torch.log", "traceback", "environment"),
        ("deepseek-ocr_83_pip_requires_incompatible.log", "exception-line", "environment"),
        ("vllm-tgis-adapter_15_convert_output_positional_args.log", "traceback", "caller"),
        ("tina_2_c10d_tcpstore_client_timeout.log", "exception-line", "environment"),
        ("worker-vllm_199_worker_exit_code_136.log", "death-line", "unknown"),
        ("modal-examples_1154_runner_init_timeout.log", "wrapper-message", "unknown"),
        ("vllm-omni_352_stage_error_list_index.log", "wrapper-message", "unknown"),
        (
            "oci-data-science-ai-samples_363_nvidia_container_cli_cuda_requirement.log",
            "wrapper-message",
            "environment",
        ),
        ("rllm_217_router_api_request_failed_500.log", "wrapper-message", "unknown"),
        ("verba_150_websocket_roles_must_alternate.log", "wrapper-message", "config"),
        ("tpu-inference_1082_vllm_c_warning.log", "wrapper-message", "environment"),
        ("vllm-ascend_1114_kernels_so_missing.log", "wrapper-message", "environment"),
        ("vllm-ascend_3236_dpmetadata_attr.log", "exception-line", "vllm"),
        ("helm_8_gke_autopilot_gpu_node_selector.log", "exception-line", "config"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field16", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
