"""What a run actually did (backends, KV cache, graphs, threads, plugins), read from its
log, and a field-by-field comparison of two runs."""

from vllmdiag.fingerprint.model import FieldDiff, Fingerprint, fingerprint_diff
from vllmdiag.fingerprint.parse import fingerprint_file, parse_lines

__all__ = ["FieldDiff", "Fingerprint", "fingerprint_diff", "fingerprint_file", "parse_lines"]
