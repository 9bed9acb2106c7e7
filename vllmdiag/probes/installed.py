"""Check that distributions and what they depend on are installed whole, file by file
(stdlib only).

argv: distribution names. Each, and every installed distribution it requires (directly
or not: ``nvidia-cutlass-dsl`` is a few files, its code is in a dependency), must have
every file its RECORD lists (compiled ``.pyc`` files excepted: they come and go).
Requirements behind an extra are not followed. Prints one JSON object:
``{"missing": [dist, ...], "damaged": {dist: {"missing_files": N, "examples": [...]}},
"checked_dists": N, "checked_files": N}``.
"""

import csv
import json
import os
import re
import sys
from importlib import metadata

NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canon(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(names):
    """The distributions to check: the named ones and those they require, installed."""
    installed = {}  # type: dict[str, metadata.Distribution]
    for each in metadata.distributions():  # one scan of the path, not one per name
        installed.setdefault(canon(each.metadata["Name"] or ""), each)
    todo = [canon(n) for n in names]
    seen = {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        found = installed.get(name)
        seen[name] = found
        if found is None:
            continue
        for req in found.requires or []:
            marker = req.partition(";")[2]
            m = NAME.match(req)
            if m and "extra" not in marker:
                todo.append(canon(m.group(1)))
    return seen


def check(dist):
    record = dist.read_text("RECORD")
    if record is None:  # installed without a RECORD: nothing to check it against
        return [], 0
    base = str(dist.locate_file(""))
    gone = []
    checked = 0
    for row in csv.reader(record.splitlines()):
        if not row or row[0].endswith(".pyc") or "__pycache__" in row[0]:
            continue
        checked += 1
        if not os.path.exists(os.path.join(base, row[0])):
            gone.append(row[0])
    return gone, checked


def main():
    asked = {canon(n): n for n in sys.argv[1:]}
    dists = closure(asked)
    missing = [asked[n] for n in asked if dists.get(n) is None]
    damaged = {}
    checked_files = 0
    checked_dists = 0
    for name, dist in sorted(dists.items()):
        if dist is None:
            continue
        gone, checked = check(dist)
        checked_files += checked
        checked_dists += 1
        if gone:
            label = asked.get(name) or dist.metadata["Name"] or name
            damaged[label] = {"missing_files": len(gone), "examples": gone[:3]}
    print(
        json.dumps(
            {
                "missing": missing,
                "damaged": damaged,
                "checked_dists": checked_dists,
                "checked_files": checked_files,
            }
        )
    )


main()
