"""Check that distributions are installed whole, file by file (stdlib only).

argv: distribution names. For each, every file its RECORD lists must exist (compiled
``.pyc`` files excepted: they come and go). Prints one JSON object:
``{"missing": [dist, ...], "damaged": {dist: {"missing_files": N, "examples": [...]}},
"checked_files": N}``.
"""

import json
import os
import sys
from importlib import metadata


def check(name):
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None, 0
    files = dist.files
    if files is None:  # no RECORD: nothing to check it against
        return [], 0
    gone = []
    checked = 0
    for f in files:
        text = str(f)
        if text.endswith(".pyc") or "__pycache__" in text:
            continue
        checked += 1
        if not os.path.exists(str(dist.locate_file(f))):
            gone.append(text)
    return gone, checked


def main():
    missing = []
    damaged = {}
    checked_files = 0
    for name in sys.argv[1:]:
        gone, checked = check(name)
        checked_files += checked
        if gone is None:
            missing.append(name)
        elif gone:
            damaged[name] = {"missing_files": len(gone), "examples": gone[:3]}
    print(json.dumps({"missing": missing, "damaged": damaged, "checked_files": checked_files}))


main()
