"""What a user mistake looks like on the command line, checked the same way everywhere."""

from __future__ import annotations

import json

from typer.testing import Result


def assert_user_error(result: Result, where: str | None, *fragments: str) -> str:
    """The error line (``error: WHERE: message``), an optional hint line, exit 1."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2, lines
    head = f"error: {where}: " if where else "error: "
    assert lines[0].startswith(head), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    if len(lines) == 2:
        assert lines[1].startswith("  hint: ") and len(lines[1]) > len("  hint: ")
    out = result.stdout.strip()
    assert out == "" or "error" in json.loads(out)  # --json: one error object, or nothing
    return lines[-1]
