"""What a run actually did (backends, KV cache, graphs, threads, plugins), read from its
log, and a field-by-field comparison of two runs."""

from vllmdiag.fingerprint.parse import fingerprint_file, parse_lines
from vllmdiag.model.fingerprint import FieldDiff, FieldStatus, Fingerprint, fingerprint_diff

__all__ = [
    "FieldDiff",
    "FieldStatus",
    "Fingerprint",
    "fingerprint_diff",
    "fingerprint_file",
    "parse_lines",
]
