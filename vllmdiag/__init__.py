"""vllmdiag: diagnose vLLM regressions with single-variable experiments."""

__version__ = "0.1.0"
