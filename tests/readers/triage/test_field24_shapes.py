"""Readers and blame rules for what the twenty-third held-out corpus
(``fixtures/logs/field24/``, 45 logs, as many as the searches left allowed) showed:
BuildKit's own error, uv's resolver after its spinner, Xinference's record of a request
that ended with an error, RunPod's worker's ``[error]``, quotes told apart from two
separate backticked names, and new catalogue entries. Each on a minimal excerpt of the
real shape, and on the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause, no_cause


@pytest.mark.parametrize(
    ("text", "process", "origin"),
    [
        # BuildKit cannot run the step: its own error
        (
            "ERROR: failed to build: failed to solve: failed to compute cache key: failed to "
            'calculate checksum of ref abc::def: "/upstream/requirements/cpu-build.txt": not '
            "found\n",
            "docker",
            "environment",
        ),
    ],
)
def test_buildkits_own_error_is_read_as_dockers(
    tmp_path: Path, text: str, process: str, origin: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.evidence, rc.process, rc.origin) == ("exception-line", process, origin)
    assert rc.message.startswith("failed to build: failed to solve: failed to compute cache key")


def test_a_build_step_that_ran_and_failed_is_not_buildkits_own_error(tmp_path: Path) -> None:
    # BuildKit only reports the step's failure: the step's own error is not in view
    note = no_cause(
        tmp_path,
        'ERROR: failed to solve: process "/bin/sh -c pip install vllm" did not complete '
        "successfully: exit code: 1\n",
    )
    assert note.startswith("unknown:")


def test_uvs_resolver_after_its_spinner_is_read_at_its_first_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "⠴ Resolving dependencies...        × No solution found when resolving dependencies "
        "for split (sys_platform == 'darwin'):\n"
        "  ╰─▶ Because there is no version of torch==2.6.0+cpu and your project depends on "
        "torch==2.6.0+cpu, we can conclude that your project's requirements are "
        "unsatisfiable.\n",
    )
    assert rc.message.startswith("No solution found when resolving dependencies for split")
    assert rc.origin == "environment"


def test_xinferences_record_of_a_request_left_with_an_error_relays_it(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "2025-03-12 09:29:12,291 xinference.core.model 822191 ERROR    [request 7533] Leave "
        "chat, error: You set image=2 (or defaulted to 1) in `--limit-mm-per-prompt`, but "
        "passed 3 image items in the same prompt., elapsed time: 0 s\n",
    )
    assert (rc.evidence, rc.origin) == ("wrapper-message", "config")
    assert rc.message == (
        "You set image=2 (or defaulted to 1) in `--limit-mm-per-prompt`, but passed 3 image "
        "items in the same prompt."
    )


def test_runpods_error_tag_is_the_records_level(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "[error]Please install vllm[audio] for audio support\n[info]Finished.\n",
    )
    assert (rc.message, rc.origin) == (
        "Please install vllm[audio] for audio support",
        "environment",
    )


def test_two_backticked_names_on_a_line_are_not_one_quote(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "  × Failed to resolve dependencies for `vllm` (v0.11.1rc4)\n"
        "  ╰─▶ Package `triton-kernels` was included as a URL dependency. URL dependencies "
        "must be expressed as direct requirements or constraints. Consider adding "
        "`triton-kernels @ git+https://github.com/triton-lang/triton.git` to your "
        "dependencies.\n",
    )
    assert rc.message.startswith("Package `triton-kernels` was included as a URL dependency")
    assert rc.origin == "vllm"


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        (
            "Intrinsic name not mangled correctly for type arguments! Should be: llvm.round.f32\n",
            "dependency",
        ),
        (
            "The decoder prompt contains a(n) image item with length 6132, which exceeds the "
            "pre-allocated encoder cache size 6084. Please reduce the input size.\n",
            "config",
        ),
        (
            "ValueError: You set video=10 (or defaulted to 1) in `--limit-mm-per-prompt`, but "
            "found 26 items in the same prompt.\n",
            "config",
        ),
        (
            "RuntimeError: Every node should have a unique IP address. Got 2 nodes with 3 "
            "unique IP addresses\n",
            "environment",
        ),
        ("RuntimeError: failed to map GGUF parameters (18288)\n", "vllm"),
        (
            "LookupError: setuptools-scm was unable to detect version for /workspace.\n",
            "environment",
        ),
        (
            "RuntimeError: Cannot find CUDA_HOME. CUDA must be available in order to build the "
            "package.\n",
            "environment",
        ),
        ("RuntimeError: Gloo connectFullMesh failed ...\n", "environment"),
        (
            "[2025-06-13 01:49:41,730 E 1 1] gcs_rpc_client.h:179: Failed to connect to GCS at "
            "address 10.108.0.184:6379 within 5 seconds.\n",
            "unknown",
        ),
    ],
)
def test_new_catalogue_entries_blame_as_the_message_says(
    tmp_path: Path, text: str, origin: str
) -> None:
    assert cause(tmp_path, text).origin == origin


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("homelab_1738_buildkit_cpu_build_txt_not_found.log", "exception-line", "environment"),
        ("vllm_15985_uv_no_solution_torch_cpu_darwin_x86.log", "exception-line", "environment"),
        ("vllm_27573_uv_triton_kernels_url_dependency.log", "exception-line", "vllm"),
        ("inference_3054_limit_mm_image2_passed3.log", "wrapper-message", "config"),
        ("glm-ocr_157_image_6132_exceeds_encoder_cache_6084.log", "exception-line", "config"),
        ("worker-vllm_223_voxtral_install_vllm_audio.log", "exception-line", "environment"),
        ("vllm-gfx906_7_intrinsic_not_mangled_llvm_round.log", "exception-line", "dependency"),
        ("vllm_19543_ray_worker_gcs_connect_5s.log", "exception-line", "unknown"),
        ("aws-do-eks_50_gloo_loopback_lws_pp2.log", "exception-line", "environment"),
        ("vllm_38716_failed_map_gguf_parameters.log", "exception-line", "vllm"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field24", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)


def test_field20s_image_above_the_encoder_cache_is_now_the_users_setting() -> None:
    rc = fixture_cause("field20", "vllm_34040_glm_ocr_encoder_cache_size_400.log")
    assert rc.origin == "config"
