"""What a run actually did (backends, KV cache, graphs, threads, plugins), read from its
log, and a field-by-field comparison of two runs."""

from vllmdiag.model.fingerprint import FieldDiff, FieldStatus, Fingerprint, fingerprint_diff
from vllmdiag.readers.fingerprint.parse import fingerprint_file, parse_lines

__all__ = [
    "FieldDiff",
    "FieldStatus",
    "Fingerprint",
    "fingerprint_diff",
    "fingerprint_file",
    "parse_lines",
]
