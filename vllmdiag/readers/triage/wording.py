"""Whose fault a failure is by what its words say failed, where no catalogue entry knows
the message (pure): the last readings before the frame that raised decides
(``blame.decide``), each the general form of what ``docs/blame.md`` lists case by case.

- ``by_words``, for a message raised in vLLM's code or with no frame in view: a check
  that refuses a combination of settings it does not offer (``X is not supported with
  Y``, ``is only supported for``, ``hasn't supported .. yet``, ``does not support``, ``is
  not applicable``, ``cannot .. when X is enabled``, ``is not a multimodal model``), a
  value above a limit (``exceeds``, ``must be <= N``, ``cannot request more than N``), an
  argument or choice it does not know (``Unknown engine argument``, ``invalid choice``, a
  command line click or argparse refused), or a request past what the server was started
  with (``You set image=2 .. but passed 3``) is the user's settings (``config``); with no
  frame in view, words that name the machine or what is installed on it (``CUDA_HOME``,
  ``nvcc``, a NumPy the extension was not compiled for, an operator a build lacks, an
  undefined symbol, a system library, the network between hosts, a port another process
  holds, a command the shell cannot find) are ``environment``; so is the device or its
  platform lacking what was asked (``The device doesn't support querying ..``). A
  library's own words that the failure is its internal error (``FlashInfer Internal
  Error``) make it that library's (``dependency``).
- ``by_transport``: a connection error an HTTP client raised is no defect of the client.
- ``by_file_system``: the file system refusing to make a directory is the machine.
- ``by_test_check``: a test's failed assertion only checks (``unknown``).

What the words do not settle is left to the frames: a message naming the hardware, the
platform, a build, its kernels or a model architecture as what is lacking (``requires
GPUs with sm75``, ``This flash attention build does not support ..``) is no setting's; a
module or name an import lacks was asked for by someone only the frames show; an
invariant between two values (``must be divisible by``) names no setting the user chose;
a refused connection does not say whose end failed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from vllmdiag.readers.triage.lookups import Frame
from vllmdiag.readers.triage.parties import Blame

#: A check refusing a combination of settings, a value past a limit, an argument or a
#: choice it does not know, or a request past what the server was started with.
_SETTING = re.compile(
    r"(?i)\b(?:is|are) not (?:yet )?supported (?:with|for|in|when|unless|by|together)\b"
    r"|\b(?:is|are) only supported (?:for|with|in|when|by)\b"
    r"|\bhas(?:n't| not) (?:yet )?supported\b"
    r"|\bdoes not (?:yet )?support\b"
    r"|\bis not applicable\b"
    r"|\(\d+\) exceeds\b|\bexceeds (?:the )?(?:available|maximum|max|limit|pre-allocated)\b"
    r"|\bmust be (?:<=|>=|<|>|less than|greater than|at (?:most|least)|smaller than"
    r"|larger than)"
    r"|^Unknown (?:engine )?argument\b|\binvalid choice\b"
    r"|^(?:Got unexpected extra arguments?|No such (?:option|command)|Missing option"
    r"|unrecognized arguments)\b"
    r"|\bYou set \S+ .*\bbut (?:passed|found|got)\b"
    r"|\b(?:[Cc]annot|can't|can not)\b.*\bwhen\b.*\b(?:is|are) (?:enabled|disabled|set)\b"
    r"|\b(?:[Cc]annot|can't) request more than \d+"
    r"|\bis not an? (?:multimodal|generation|generative|embedding|pooling|chat|vision) model\b"
)
#: What is lacking is the machine's hardware or platform, not a setting.
_HARDWARE = re.compile(
    r"(?i)\brequires? (?:a )?GPUs?\b|\bGPUs? with (?:sm|compute capability)"
    r"|\bonly supports? (?:Linux|Windows|macOS|CUDA|ROCm)\b|\bplatform\b|\bdriver\b"
    r"|\bbuild\b|\bkernels?\b|\bdevices\b|\barchitectures?\b|^Device type\b"
)
#: The device or its platform lacks what was asked of it (``The device doesn't support
#: querying the available free memory``, ``Device type HPU is not supported for
#: torch.Generator() api``).
_DEVICE_LACKS = re.compile(
    r"^(?:The )?(?:device|GPU|platform|hardware|accelerator) (?:does not|doesn't) support\b"
    r"|^Device type \w+ is not supported\b",
    re.IGNORECASE,
)
#: A library's own words that the failure is its internal error (``FlashInfer Internal
#: Error: Invalid configuration .. report the issue to the developers``).
_INTERNAL = re.compile(r"\b(?!(?:An|The|A)\b)(?P<pkg>[A-Z][\w-]+) Internal Error\b")
#: The machine or what is installed on it.
_MACHINE = re.compile(
    r"\bCUDA_HOME\b|\bnvcc\b"
    r"|\bcompiled (?:using|against|with) NumPy\b|\boperator [\w:]+ does not exist\b"
    r"|\bundefined symbol\b|\bGLIBC(?:XX)?_\d|cannot open shared object file"
    r"|\bconnectFullMesh\b|\bunique IP address\b|\bName or service not known\b"
    r"|\bNetwork is unreachable\b|\bAddress (?:already )?in use\b"
    r"|^\S+: (?:command )?not found$"
)


#: HTTP clients: a connection error raised in their code only reports what the network
#: or the server did.
_HTTP_CLIENTS = frozenset(
    {"requests", "urllib3", "httpx", "httpcore", "aiohttp", "openai", "anthropic", "litellm"}
)
#: The types those clients name a connection that failed with.
_CONNECTION_ERROR = re.compile(
    r"(?:^|\.)(?:API)?(?:Connection|Connect|ConnectTimeout|ReadTimeout|Timeout|MaxRetry"
    r"|NewConnection|Protocol|ClientConnector|ServerDisconnected|RemoteDisconnected)"
    r"(?:Error|Exception)?$|(?:^|\.)APITimeoutError$"
)
#: The machine could not reach the host at all: its name did not resolve, or no route.
_UNREACHABLE = re.compile(
    r"(?i)failed to resolve|name resolution|Name or service not known|nodename nor servname"
    r"|Network is unreachable|No route to host|getaddrinfo failed"
)


def by_transport(typ: str, raiser: Frame | None, message: str) -> Blame | None:
    """A connection error an HTTP client raised: no defect of the client. Where its
    words say the machine could not reach the host (a name that did not resolve, no
    route), the network (``environment``); otherwise which end failed (a server down or
    not yet up, a wrong address) is not in view (``unknown``)."""
    if raiser is None or raiser.package not in _HTTP_CLIENTS or not _CONNECTION_ERROR.search(typ):
        return None
    if _UNREACHABLE.search(message):
        return Blame(
            "environment",
            None,
            f"{raiser.package} could not reach the host (its name did not resolve, or no "
            "route to it): the machine's network, not the HTTP client",
        )
    return Blame(
        "unknown",
        None,
        f"{raiser.package} only reports that the connection failed (refused, reset or timed "
        "out): whether the server was down, not yet up, or the address wrong is not in view",
    )


#: The file system's refusals, by the error's type or its errno.
_FILE_SYSTEM = re.compile(r"(?:^|\.)(?:PermissionError|FileNotFoundError|NotADirectoryError)$")
_FS_ERRNO = re.compile(r"^\[Errno (?:2|13|20|28|30)\] ")
#: Python's own calls that make a directory (``os.makedirs``, ``pathlib.Path.mkdir``).
_MAKES_DIRECTORY = frozenset({"makedirs", "mkdir"})


def by_file_system(typ: str, message: str, funcs: Sequence[str]) -> Blame | None:
    """The file system refusing to make a directory (``os.makedirs`` raising
    ``PermissionError`` or ``FileNotFoundError``, a disk full or read-only): whichever
    code asked for a cache or work folder, the machine (its user, its home, its disks)
    must let it be made: ``environment``. Other paths are left to the frames."""
    if not funcs or funcs[-1] not in _MAKES_DIRECTORY:
        return None
    if not (_FILE_SYSTEM.search(typ) or (typ.endswith("OSError") and _FS_ERRNO.match(message))):
        return None
    return Blame(
        "environment",
        None,
        "the file system refused to make a directory (os.makedirs): the machine's user, "
        "home or disk must allow it, not the code that asked for the folder",
    )


#: A test's own file (pytest's ``tests/../test_x.py``, ``x_test.py``).
_TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]+|[^/]+_test)\.py$")


def by_test_check(typ: str, raiser: Frame | None) -> Blame | None:
    """A test's failed assertion: the test only checks what the code under test gave, and
    that code is not in view (``unknown``)."""
    if raiser is None or typ.rsplit(".", 1)[-1] != "AssertionError":
        return None
    if not _TEST_FILE.search(raiser.file.replace("\\", "/")):
        return None
    return Blame(
        "unknown",
        None,
        "a test's assertion failed: the test only checks what the code under test gave, "
        "and that code is not in view",
    )


def by_words(message: str, raiser: Frame | None) -> Blame | None:
    """Whose fault the failure is by its message's words (see the module), or None where
    they say nothing of it. ``raiser``: the frame that raised it, None where none is in
    view."""
    internal = _INTERNAL.search(message)
    if internal and (raiser is None or raiser.package == internal["pkg"].lower()):
        return Blame(
            "dependency",
            internal["pkg"].lower(),
            f"the message says it is {internal['pkg']}'s internal error (its own check, "
            "asking for a report to its developers)",
        )
    if raiser is not None and raiser.place != "vllm":
        return None
    if _DEVICE_LACKS.search(message):
        return Blame(
            "environment",
            None,
            "the message says the device or its platform lacks what was asked of it: the "
            "machine, not a setting or a defect in the code that asked",
        )
    if _SETTING.search(message) and not _HARDWARE.search(message):
        return Blame(
            "config",
            None,
            (
                "vLLM's own check refuses a combination or value of settings it does not "
                "offer: the user's settings, not a defect in vLLM"
            )
            if raiser is not None
            else (
                "the message refuses a combination or value of settings (no frame in view): "
                "the user's settings"
            ),
        )
    if raiser is None and _MACHINE.search(message):
        return Blame(
            "environment",
            None,
            "the message names the machine or what is installed on it (no frame in view): "
            "the installed stack or the network, not the code that raised it",
        )
    return None
