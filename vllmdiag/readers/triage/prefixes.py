"""The prefixes a log line can carry before vLLM's text, as regexes (see ``lines``).

Each is anchored at the start of what is left of the line; ``lines.normalise`` peels
them in a loop, so they combine in any order the capture produced.
"""

from __future__ import annotations

import re

_LEVELS = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL"
#: The tails of vLLM's level words a paste's first line may start with (its head cut).
CUT_LEVELS = {
    "RROR": "ERROR",
    "ROR": "ERROR",
    "ARNING": "WARNING",
    "RNING": "WARNING",
    "NFO": "INFO",
    "EBUG": "DEBUG",
    "RITICAL": "CRITICAL",
}
_CUT_LEVELS = "|".join(sorted(CUT_LEVELS, key=len, reverse=True))
_ISO = r"\d{1,4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"

#: Colour and cursor codes: real escapes, the ``^[[`` and ``ESC[`` spellings of a paste,
#: syslog's octal ``#033[``.
ANSI = re.compile(r"(?:\x1b|\^\[|ESC|#033)\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
#: SGR codes whose escape byte was lost on the way into an issue (`` [36m(pid=1) [0m``).
BARE_SGR = re.compile(r"\[(?:\d{1,3};)*\d{1,3}m ?")

QUOTE = re.compile(r"^> ?(?=\S|  )")  # a markdown quote
FENCE = re.compile(r"^\s*(?:> ?)?(?:```|~~~)[\w+-]*\s*$")  # a markdown code fence
#: Python's exception-group gutters (``  | ``, ``  +-+---- 1 ----``, ``  +------``) and
#: its group header (``  + Exception Group Traceback (most recent call last):``).
GROUP_GUTTER = re.compile(r"^\s*(?:\| ?)+")
GROUP_RULE = re.compile(r"^\s*\+[-+]*(?: ?-+ ?\d+ ?-+| ?\.\.\. ?.*)?-*\s*$")
GROUP_HEAD = re.compile(r"^\s*\+ (Exception Group Traceback \(most recent call last\):)\s*$")
#: Markdown emphasis or inline code a paste wrapped a line in (``**TypeError: ..**``,
#: ```ValueError: ..```, bold and italic at once: ``**_ValueError: .._**``), or glued in
#: front of it (``****(EngineCore_DP0 pid=1) ..``).
MARKUP = re.compile(r"^(?:\*{1,4}|`{1,3})_?(?=[A-Za-z(\[])")
MARKUP_END = re.compile(r"(?<=\S)_?(?:\*{1,4}|`{1,3})$")
#: pytest's report of a failing test: ``E   `` before each line of the error, ``>`` in
#: front of the source line that raised.
PYTEST_ERROR = re.compile(r"^E {2,}(?=\S)")
PYTEST_MARK = re.compile(r"^>(?= {3,}\S)")
#: A module path and the exception's class a paste put a space between
#: (``pydantic_core._pydantic_core. ValidationError: ..``).
SPACED_TYPE = re.compile(r"^(\s*[a-z_][\w.]*\.) (?=[A-Z]\w*(?:Error|Exception):)")
BOX = re.compile(r"^\s*│\s?")  # a TUI log viewer's border (k9s), rich's traceback box
BOX_END = re.compile(r"\s*│\s*$")
#: rich's boxed traceback: its top (the header) and bottom border, a source line's
#: marker of the line that raised (``❱ 407 │``), a line whose left border the paste cut.
RICH_TOP = re.compile(r"^\s*╭─+ ?(Traceback \(most recent call last\)) ?─+╮\s*$")
RICH_BOTTOM = re.compile(r"^\s*╰─+╯\s*$")
RICH_SOURCE = re.compile(r"^(?:❱ ?)?\s*\d+ │")
RIGHT_BORDER = re.compile(r"^(?P<body>[^│]*\S)\s+│\s*$")

#: What a capturer adds: an ISO timestamp (docker --timestamps, kubectl, CI; a first
#: line may have lost its head), a CRI stream tag, syslog/journald's date, host and
#: unit[pid], Docker BuildKit's step and seconds (``#8 25.71 ``, ``25.71 ``), and one
#: space or a ``|`` separator after it (no more: the indentation of a traceback's frame
#: lines is the line's own).
CAPTURE = re.compile(
    rf"^(?:\[{_ISO}\]|{_ISO}(?=\s)(?: (?:stdout|stderr) [FP](?= ))?"
    r"|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)?(?: [\w.-]+ [\w.@/-]+(?:\[\d+\])?:)?"
    r"|(?:#\d+ )?\d{1,5}\.\d{2,3}(?= )"
    r"|\d{1,3}(?:\.\d{1,3}){3}:(?= ))"  # a multi-node launcher's host (pdsh, DeepSpeed)
    r"(?:[ \t]?\|[ \t]?|[ \t])?"
)

#: A pod's name and container in front of its line (``stern``, ``kubectl logs --prefix``):
#: ``name-6c8f9c4df6-vh88z vllm (APIServer pid=1) ..``, ``[pod/name-x/vllm] ..``; or the
#: container's name alone (``kserve-container (EngineCore_0 pid=58) ..``), before a process
#: tag or a timestamp; or the file name grep puts before a line it found.
POD = re.compile(
    r"^(?:\[pod/[\w.-]+/[\w.-]+\] "
    r"|[a-z0-9][a-z0-9-]*-[a-z0-9]{5} [a-z0-9][a-z0-9-]* (?=\(|[A-Z]{4,8} )"
    r"|[a-z][a-z0-9]*(?:-[a-z0-9]+)+ "
    r"(?=\([A-Za-z_][\w:.-]* pid=\d|\[rank\d+\]:|\d{4}-\d{2}-\d{2}[ T])"
    # grep's name of the file a line came from (``node0.out:(Worker pid=7) ..``)
    r"|[\w.-]+\.(?:out|log|err|txt):(?=\([A-Za-z_][\w:.-]* pid=\d|\[rank\d+\]:))"
)

#: docker compose's service column: ``vllm-server  | ``.
COMPOSE = re.compile(r"^[A-Za-z0-9][\w.-]*[ \t]+\|[ \t]?")

#: Process tags: vLLM's ``(Name pid=N)`` (Ray adds ``, ip=..``; a Ray actor may be named
#: ``Actor(name)``, a Serve replica ``ServeReplica:app:Deployment``, a Ray Data worker
#: ``MapWorker(MapBatches(UDF))``), ``(pid=N)``, newer ``(Engine (DP0))``, Ray's own
#: daemons (``(raylet)``, ``(raylet, ip=..)``, ``(autoscaler +2m13s)``), torch's
#: ``[rankN]:``, a tag of vLLM's whose ``(`` a paste lost, SGLang's ``[date TP0]`` (its
#: ranks name the process).
PROCESS = re.compile(
    r"^(?:\((?:"
    r"(?P<name>[A-Za-z_][\w:.-]*(?:\((?:[^()\s]|\([^()\s]*\))*\))?(?: \(\w+\)| rank=\d+)?)"
    r" pid=(?P<pid>\d+)(?:,[^)]*)?"
    r"|pid=(?P<rpid>\d+)(?:,[^)]*)?"
    r"|(?P<short>(?:Engine|Worker|API)\w*(?: \(\w+\))?)"
    r"|(?P<daemon>raylet|gcs_server|autoscaler|dashboard_agent|log_monitor)"
    r"(?:, ip=[^)]*| \+[\dhms]+)?"
    r")\) ?"
    r"|\[rank(?P<rank>\d+)\]: ?"
    # a tag of vLLM's own processes whose opening parenthesis the paste lost
    # (``EngineCore_0 pid=1248800) ValueError: ..``)
    r"|(?P<lost>(?:EngineCore|Worker|APIServer|VllmWorker)\w*(?: rank=\d+)?) pid=(?P<lpid>\d+)\) "
    r"|\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?P<ranks>(?: (?:DP|TP|PP|EP|CP)\d+)+)\] )"
)

#: vLLM's logger: ``INFO 09-21 12:34:56 [core.py:123]``, V0's ``core.py:123]``, no date;
#: or, in a paste that kept only the level, the level word right before an exception
#: line (``(Worker_TP1) ERROR KeyError: ..``), or the level and an ellipsis where the user
#: elided the rest (``ERROR ... <error>``); a first line whose head the paste cut keeps
#: the tail of its level word before the date (``RROR 12-18 19:47:34 engine.py:366]``).
LOGGER = re.compile(
    rf"^(?:(?P<level>{_LEVELS})|(?P<cut>{_CUT_LEVELS})(?= \d{{2}}-\d{{2}} )) +"
    r"(?:(?:(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)? +)?"
    r"(?:[\w-]*\[[^\]\s]+:\d+\]|[\w./-]+:\d+\]) ?"
    # the rest of the prefix elided by the user (``ERROR ... torch.distributed..``)
    r"|(?:\.{3}|…) (?=\S)"
    r"|(?=[A-Z][\w.]*(?:Error|Exception): ))"
)

#: Loggers of the programs around vLLM: glog/c10 (``[E1001 16:06:04.5 file.cpp:607]``, and
#: the ``[c10d]`` tag torch's distributed store puts after it),
#: Go's klog (llm-d, kserve's Go side: ``E0612 10:00:00.123456   1 server.go:45]``; glog
#: from 0.7 puts the year in: ``E20260106 06:43:02.966156  5793 transport.cpp:820]``),
#: Ray's C++ logger, dynamo (``ERROR core.run_engine_core:``), xinference, Python's
#: ``- name - LEVEL -``, its default ``ERROR:root:`` and ``LEVEL    pid`` (ragflow),
#: uvicorn's ``ERROR:    ``, kserve's ``1 kserve ERROR [f():1]``, vllm-ascend's
#: ``[UC][E]``, CANN's ``[ERROR] date (PID:..)``, LLaMA-Factory's ``[INFO|date]
#: name:12 >>``, lm-eval's ``date:time,ms LEVEL [file:12]``, DeepSpeed's ``[ERROR]
#: [file.py:12:func]``, loguru's ``name:func:12 -`` (its level column peeled before), Ray's
#: Python logger's ``ERROR worker.py:427 -- `` (after the tab behind its timestamp), Ray
#: Serve's ``ERROR 2024-09-19 08:23:55,732 controller 528 deployment_state.py:681 - ``,
#: vLLM's own prefix cut to its file tag (``[serving_chat.py:1001] ``), and RunPod's
#: worker's ``[error]`` glued to its record.
FOREIGN = re.compile(
    r"^(?:\[[EWIF]\d{0,4}(?: [\d:.]+)? ?[\w.]+:\d+\] ?(?:\[c10d\] )?"
    r"|[EWIF](?:\d{4})?\d{4} \d{2}:\d{2}:\d{2}\.\d+ +\d+ [\w./-]+:\d+\] "
    rf"|(?:{_LEVELS}):[\w.]+:(?=\S)"
    rf"|\[(?:{_LEVELS})\|[\d-]+ [\d:,.]+\] [\w./-]+:\d+ >> "
    rf"|\d{{4}}-\d{{2}}-\d{{2}}:\d{{2}}:\d{{2}}:\d{{2}}(?:,\d+)? (?:{_LEVELS}) +\[[^\]]+\] "
    rf"|\[(?:{_LEVELS})\] (?:\[[\w./<>-]+:\d+(?::[\w<>]+)?\] )?"
    r"|[\w.]+:[\w<>]+:\d+ - "
    rf"|[ \t]*(?:{_LEVELS}) [\w.]+\.py:\d+ -- "
    r"|\[\d{4}-\d{2}-\d{2} [\d:,.]+ [EWIF] \d+ \d+\] (?:\(\w+\) )?[\w.]+:\d+: ?"
    r"| ?(?:TRACE|DEBUG|INFO|WARN|ERROR)[ \t]+[A-Za-z_][\w.]*(?:::[\w.]+)*: "
    rf"|(?:{_LEVELS}):[ \t]+(?=\S)"
    rf"|[a-z][\w.]+ \d+ (?:{_LEVELS}) +"
    rf"|- [\w.]+ - (?:{_LEVELS}) - "
    rf"|(?:{_LEVELS}) +\d+ (?=\S)"
    rf"|\d+ [\w.]+ (?:{_LEVELS}) \[[^\]]*\] "
    r"|(?:\[[A-Z]{1,4}\]){2,} ?"
    r"|\[[\w.-]+\.py:\d+\] (?=\S)"
    r"|\[(?:ERROR|WARNING|INFO|DEBUG)\] \d{4}-\d{2}-\d{2}-[\d:.]+ \(PID:\d+[^)]*\) "
    rf"|(?:{_LEVELS}) \d{{4}}-\d{{2}}-\d{{2}} [\d:,.]+ [\w:.-]+ \d+ [\w./-]+:\d+ - "
    # RunPod's worker: its level in brackets, glued to the record (``[error]Please ..``)
    r"|\[(?:error|warning|info|debug)\](?=\S))"
)
#: What a log deduplicator appends or wraps a repeated line in: Ray's ``[repeated 3x
#: across cluster]`` (with its one-time ``(Ray deduplicates logs by default. ..)``), and
#: rsyslog's ``message repeated 3 times: [ <line>]``.
REPEATED = re.compile(
    r"\s*\[repeated \d+x across cluster\](?: \(Ray deduplicates logs by default\..*)?$"
)
SYSLOG_REPEATED = re.compile(r"^message repeated \d+ times: \[ ?(?P<line>.*?)\]?$")
UC_SUFFIX = re.compile(r"\s*\[\d+,\d+\]\[[\w.]+:\d+,\w+\]$")
