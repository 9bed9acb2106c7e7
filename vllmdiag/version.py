"""vllmdiag's version, apart from the library surface (which imports every job lazily)."""

__version__ = "0.1.0"
