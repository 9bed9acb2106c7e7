"""The prefixes a log line can carry before vLLM's text, as regexes (see ``lines``).

Each is anchored at the start of what is left of the line; ``lines.normalise`` peels
them in a loop, so they combine in any order the capture produced.
"""

from __future__ import annotations

import re

_LEVELS = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL"
_ISO = r"\d{1,4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"

#: Colour and cursor codes: real escapes, the ``^[[`` and ``ESC[`` spellings of a paste,
#: syslog's octal ``#033[``.
ANSI = re.compile(r"(?:\x1b|\^\[|ESC|#033)\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
#: SGR codes whose escape byte was lost on the way into an issue (`` [36m(pid=1) [0m``).
BARE_SGR = re.compile(r"\[(?:\d{1,3};)*\d{1,3}m ?")

QUOTE = re.compile(r"^> ?(?=\S|  )")  # a markdown quote
#: Markdown emphasis or inline code a paste wrapped a line in (``**TypeError: ..**``,
#: ```ValueError: ..```), or glued in front of it (``****(EngineCore_DP0 pid=1) ..``).
MARKUP = re.compile(r"^(?:\*{1,4}|`{1,3})(?=[A-Za-z(\[])")
MARKUP_END = re.compile(r"(?<=\S)(?:\*{1,4}|`{1,3})$")
BOX = re.compile(r"^\s*│\s?")  # a TUI log viewer's border (k9s)
BOX_END = re.compile(r"\s*│\s*$")

#: What a capturer adds: an ISO timestamp (docker --timestamps, kubectl, CI; a first
#: line may have lost its head), a CRI stream tag, syslog/journald's date, host and
#: unit[pid], and one space or a ``|`` separator after it (no more: the indentation of a
#: traceback's frame lines is the line's own).
CAPTURE = re.compile(
    rf"^(?:\[{_ISO}\]|{_ISO}(?=\s)(?: (?:stdout|stderr) [FP](?= ))?"
    r"|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)?(?: [\w.-]+ [\w.@/-]+(?:\[\d+\])?:)?)"
    r"(?:[ \t]?\|[ \t]?|[ \t])?"
)

#: A pod's name and container in front of its line (``stern``, ``kubectl logs --prefix``):
#: ``name-6c8f9c4df6-vh88z vllm (APIServer pid=1) ..``, ``[pod/name-x/vllm] ..``.
POD = re.compile(
    r"^(?:\[pod/[\w.-]+/[\w.-]+\] "
    r"|[a-z0-9][a-z0-9-]*-[a-z0-9]{5} [a-z0-9][a-z0-9-]* (?=\(|[A-Z]{4,8} ))"
)

#: docker compose's service column: ``vllm-server  | ``.
COMPOSE = re.compile(r"^[A-Za-z0-9][\w.-]*[ \t]+\|[ \t]?")

#: Process tags: vLLM's ``(Name pid=N)`` (Ray adds ``, ip=..``; a Ray actor may be named
#: ``Actor(name)``), ``(pid=N)``, newer ``(Engine (DP0))``, Ray's own daemons
#: (``(raylet)``, ``(raylet, ip=..)``), torch's ``[rankN]:``.
PROCESS = re.compile(
    r"^(?:\((?:"
    r"(?P<name>[A-Za-z][\w-]*(?:\([^()\s]*\))?(?: \(\w+\)| rank=\d+)?) pid=(?P<pid>\d+)"
    r"(?:,[^)]*)?"
    r"|pid=(?P<rpid>\d+)(?:,[^)]*)?"
    r"|(?P<short>(?:Engine|Worker|API)(?: \(\w+\))?)"
    r"|(?P<daemon>raylet|gcs_server|autoscaler|dashboard_agent|log_monitor)(?:, ip=[^)]*)?"
    r")\) ?"
    r"|\[rank(?P<rank>\d+)\]: ?)"
)

#: vLLM's logger: ``INFO 09-21 12:34:56 [core.py:123]``, V0's ``core.py:123]``, no date.
LOGGER = re.compile(
    rf"^(?P<level>{_LEVELS}) +"
    r"(?:(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)? +)?"
    r"(?:[\w-]*\[[^\]\s]+:\d+\]|[\w./-]+:\d+\]) ?"
)

#: Loggers of the programs around vLLM: glog/c10 (``[E1001 16:06:04.5 file.cpp:607]``),
#: Ray's C++ logger, dynamo (``ERROR core.run_engine_core:``), xinference, Python's
#: ``- name - LEVEL -`` and ``LEVEL    pid`` (ragflow), uvicorn's ``ERROR:    ``,
#: kserve's ``1 kserve ERROR [f():1]``, vllm-ascend's ``[UC][E]``, CANN's ``[ERROR] date
#: (PID:..)``.
FOREIGN = re.compile(
    r"^(?:\[[EWIF]\d{0,4}(?: [\d:.]+)? ?[\w.]+:\d+\] ?"
    r"|\[\d{4}-\d{2}-\d{2} [\d:,.]+ [EWIF] \d+ \d+\] (?:\(\w+\) )?[\w.]+:\d+: ?"
    r"| ?(?:TRACE|DEBUG|INFO|WARN|ERROR)[ \t]+[A-Za-z_][\w.]*(?:::[\w.]+)*: "
    rf"|(?:{_LEVELS}):[ \t]+(?=\S)"
    rf"|[a-z][\w.]+ \d+ (?:{_LEVELS}) +"
    rf"|- [\w.]+ - (?:{_LEVELS}) - "
    rf"|(?:{_LEVELS}) +\d+ (?=\S)"
    rf"|\d+ [\w.]+ (?:{_LEVELS}) \[[^\]]*\] "
    r"|(?:\[[A-Z]{1,4}\]){2,} ?"
    r"|\[(?:ERROR|WARNING|INFO|DEBUG)\] \d{4}-\d{2}-\d{2}-[\d:.]+ \(PID:\d+[^)]*\) )"
)
#: What a log deduplicator appends or wraps a repeated line in: Ray's ``[repeated 3x
#: across cluster]`` (with its one-time ``(Ray deduplicates logs by default. ..)``), and
#: rsyslog's ``message repeated 3 times: [ <line>]``.
REPEATED = re.compile(
    r"\s*\[repeated \d+x across cluster\](?: \(Ray deduplicates logs by default\..*)?$"
)
SYSLOG_REPEATED = re.compile(r"^message repeated \d+ times: \[ ?(?P<line>.*?)\]?$")
UC_SUFFIX = re.compile(r"\s*\[\d+,\d+\]\[[\w.]+:\d+,\w+\]$")
