"""Numbers a user gives on the command line (seconds, ratios): finite, in range, or a
one-line error naming the option. ``float("nan")`` compares false with everything, so
a plain ``<= 0`` test lets it through; ``inf`` would wait forever."""

from __future__ import annotations

import math

from vllmdiag.errors import ConfigError

#: The longest anything vllmdiag waits for a cell or a check: 30 days.
MAX_SECONDS = 30 * 86400.0
#: Seconds between TERM and KILL: long enough for a profiler to flush, never forever.
MAX_GRACE_S = 3600.0


def seconds(value: float, flag: str, *, zero_ok: bool, maximum: float = MAX_SECONDS) -> float:
    """``value`` as seconds for ``flag``: finite, ``> 0`` (``>= 0`` where ``zero_ok``)
    and at most ``maximum``."""
    if not math.isfinite(value):
        problem = f"{value:g} is not a number of seconds: give a finite number"
    elif value < 0 or (value == 0 and not zero_ok):
        low = "0 or more" if zero_ok else "more than 0"
        problem = f"{value:g} seconds is no time: give {low}"
    elif value > maximum:
        problem = f"{value:g} seconds is more than the {maximum:,.0f} allowed"
    else:
        return value
    raise ConfigError(problem, where=flag, hint=f"e.g. {flag} 10")


def ratio(value: float, flag: str) -> float:
    """A positive, finite ratio for ``flag``."""
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(
            f"{value:g} is not a ratio: give a finite number > 0",
            where=flag,
            hint=f"e.g. {flag} 0.9",
        )
    return value
