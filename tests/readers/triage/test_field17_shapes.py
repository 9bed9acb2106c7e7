"""Readers and blame rules for what the sixteenth held-out corpus (``fixtures/logs/field17/``)
showed: a compiler's diagnostic above the report that a pass failed, a pretty-printed
body typed by its ``"type"`` line, a user's one-word label, a client's result with an
``'error'`` field, a garbled body, a sentence in Chinese running into an untyped error,
and a platform plugin's own classes. Each on a minimal excerpt of the real shape, and on
the fixture it was found in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.triage import cause, fixture_cause

DIAGNOSTIC = """\
error: operand #0 does not dominate this use
    c_mask = token_mask[:, None] & (offs_cn[None, :] < N)
                       ^
note: operand defined here (op in a child region)
RuntimeError: PassManager::run failed
"""


def test_the_compilers_diagnostic_above_the_pass_managers_report_is_the_error(
    tmp_path: Path,
) -> None:
    rc = cause(tmp_path, DIAGNOSTIC)
    assert (rc.type, rc.message, rc.origin, rc.package) == (
        "",
        "operand #0 does not dominate this use",
        "dependency",
        "triton",
    )


def test_the_pass_managers_report_alone_is_read_as_it_is(tmp_path: Path) -> None:
    rc = cause(tmp_path, "RuntimeError: PassManager::run failed\n")
    assert (rc.type, rc.message, rc.origin) == (
        "RuntimeError",
        "PassManager::run failed",
        "dependency",
    )


def test_a_pretty_printed_body_is_typed_by_its_type_line(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        '{\n    "object": "error",\n'
        '    "message": "The model does not support Rerank (Score) API",\n'
        '    "type": "BadRequestError",\n    "param": null,\n    "code": 400\n}\n',
    )
    assert (rc.type, rc.evidence, rc.origin) == ("BadRequestError", "exception-line", "config")


def test_a_users_one_word_label_before_a_typed_exception_is_a_label(tmp_path: Path) -> None:
    rc = cause(
        tmp_path,
        "7b-model: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.25 "
        "GiB. GPU\n",
    )
    assert (rc.type, rc.process, rc.origin) == (
        "torch.cuda.OutOfMemoryError",
        "main",
        "environment",
    )
    assert rc.message.startswith("CUDA out of memory")


@pytest.mark.parametrize(
    ("text", "typ", "message", "origin"),
    [
        (
            "Send Result: {'run_id': '71d6', 'result': {'error': \"HTTPConnectionPool(host="
            "'127.0.0.1', port=5000): Max retries exceeded with url: /v1/models (Caused by "
            "NewConnectionError('<x>: Failed to establish a new connection: [Errno 111] "
            "Connection refused'))\"}, 'run_time_ms': 7026.29}\n",
            "",
            "HTTPConnectionPool(host='127.0.0.1', port=5000): Max retries exceeded",
            "unknown",
        ),
        (
            '{“”Object:"error","message":""auto" tool choice requires '
            '--enable-auto-tool-choice and --tool-call-parser to be set","type":'
            '"BadRequestError","param":null,"code":400}\n',
            "BadRequestError",
            '"auto" tool choice requires --enable-auto-tool-choice',
            "config",
        ),
    ],
)
def test_a_clients_error_field_and_a_garbled_body_relay_the_error(
    tmp_path: Path, text: str, typ: str, message: str, origin: str
) -> None:
    rc = cause(tmp_path, text)
    assert (rc.type, rc.evidence, rc.origin) == (typ, "wrapper-message", origin)
    assert rc.message.startswith(message), rc.message


def test_a_chinese_sentence_running_into_an_untyped_error_is_cut_off_it(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "使用reranker两阶段服务化评测，报错You passed 513 input tokens and requested 0 output "
        "tokens. However, the model's context length is only 512 tokens, resulting in a "
        "maximum input length of 512 tokens.\n",
    )
    assert rc.message.startswith("You passed 513 input tokens")
    assert (rc.evidence, rc.origin) == ("exception-line", "config")


def test_vllm_gaudis_own_class_asked_through_torchs_lookup_is_vllm_gaudis(
    tmp_path: Path,
) -> None:
    rc = cause(
        tmp_path,
        "    if self.is_aiter_triton_fp4_bmm_enabled:\n"
        '  File "/usr/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1967, '
        "in __getattr__\n"
        "    raise AttributeError(\n"
        "AttributeError: 'HPUMLAImpl' object has no attribute 'is_aiter_triton_fp4_bmm_enabled'\n",
    )
    assert (rc.origin, rc.package) == ("dependency", "vllm-gaudi")


@pytest.mark.parametrize(
    ("name", "evidence", "origin"),
    [
        ("triton_10327_passmanager_run_failed_fused_moe.log", "exception-line", "dependency"),
        ("qwen3-embedding_93_rerank_score_api_unsupported.log", "exception-line", "config"),
        ("qwen3_845_qwen2_7b_cuda_oom.log", "exception-line", "environment"),
        ("examples_39_connection_refused_v1_models.log", "wrapper-message", "unknown"),
        ("langchain4j_2550_auto_tool_choice_json_body.log", "wrapper-message", "config"),
        ("evalscope_1406_reranker_input_tokens_513.log", "exception-line", "config"),
        ("vllm-gaudi_833_hpumlaimpl_missing_fp4_bmm_attr.log", "traceback", "dependency"),
    ],
)
def test_the_fixtures_they_were_found_in(name: str, evidence: str, origin: str) -> None:
    rc = fixture_cause("field17", name)
    assert (rc.evidence, rc.origin) == (evidence, origin)
