"""Where the tests find the checkout and their fixtures, and where uv's download cache
for the tests lives (outside the checkout: the system temp dir, one per user, reused by
later runs on the machine; ``VLLMDIAG_TEST_UV_CACHE`` names another place)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
RECIPES = REPO / "recipes"
UV_CACHE = Path(
    os.environ.get("VLLMDIAG_TEST_UV_CACHE")
    or Path(tempfile.gettempdir()) / f"vllmdiag-test-uv-cache-{os.getuid()}"
)
