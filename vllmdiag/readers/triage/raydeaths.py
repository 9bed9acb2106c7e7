"""Ray's reports that an actor died, read as that actor's death (pure).

When an actor's process dies, the process that waited on it receives
``ray.exceptions.ActorDiedError`` with Ray's own account of the death::

    ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
            class_name: create_colocated_worker_cls.<locals>.WorkerDict
            actor_id: 5066c201b724a3936948a11201000000
            pid: 87687
            ...
    The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR
    Worker exit detail: Worker unexpectedly exits with a connection error code 2. ...

The exception is the receiver's (a driver relaying the loss); the failure is the actor's
death, which Ray describes in its last sentences: the root cause is that report, of the
process ``WorkerDict pid=87687`` (the class's own name and the pid Ray gives), read as a
death line (an older Ray gives no account: its first sentence is the death line then,
where the actor is named, or alone: a death of an actor the paste does not name, ``main``).
An actor that died because its creation task raised carries that task's
traceback instead (read as a Ray task error's remote traceback, not here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vllmdiag.readers.triage.lines import MAIN

_DIED = re.compile(r"ActorDiedError$|RayActorError$|ActorUnavailableError$")
#: Ray's account of why the actor is gone (its GCS's words, over Ray's releases).
_REPORT = re.compile(
    r"(?P<report>The actor (?:is dead|died) because (?!of an error raised in its creation task)"
    r".*|The actor never ran - it was cancelled before it started running.*)$"
)
_CLASS = re.compile(r"class_name: (?P<cls>[\w.<>]+)")
_UNEXPECTED = re.compile(r"The actor died unexpectedly before finishing this task\.")
_PID = re.compile(r"\bpid: (?P<pid>\d+)")


@dataclass(frozen=True)
class ActorDeath:
    process: str  # ``WorkerDict pid=87687``, or the class alone where no pid is given
    message: str  # Ray's account, from "The actor is dead because ..."


def actor_death(typ: str, message: str) -> ActorDeath | None:
    """The death an ``ActorDiedError`` reports, or None (another exception, a creation
    task's error, or no account of the death in view)."""
    if not _DIED.search(typ):
        return None
    report = _REPORT.search(message)
    cls = _CLASS.search(message)
    pid = _PID.search(message)
    if report is None:
        # no account of why (an older Ray, or a paste cut right after the class): still
        # the named actor's death, in Ray's first sentence; without the actor named,
        # the receiver's exception stays
        first = _UNEXPECTED.match(message)
        if first is None:
            return None
        if cls is None:
            # Ray's first sentence alone: an actor the paste does not name died; with
            # anything else after it, the receiver's exception stays
            return ActorDeath(MAIN, first.group()) if message.strip() == first.group() else None
        if pid is None and not message.rstrip().endswith(cls.group()):
            return None
        text = first.group()
    else:
        text = report["report"].strip()
    name = cls["cls"].rsplit(".", 1)[-1] if cls else "actor"
    process = f"{name} pid={pid['pid']}" if pid else name
    return ActorDeath(process, text)
