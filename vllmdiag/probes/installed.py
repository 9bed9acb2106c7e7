"""Check that distributions and what they depend on are installed whole, file by file
(stdlib only).

argv: ``[--verified FILE] NAME...``. Each named distribution, and every installed
distribution it requires (directly or not: ``nvidia-cutlass-dsl`` is a few files, its
code is in a dependency), must have every file its RECORD lists (compiled ``.pyc`` files
excepted: they come and go), with the size and SHA-256 its RECORD gives (a truncated or
overwritten file "exists" all the same). Hashing is paid once per file identity: FILE
keeps (device, inode, size, mtime) of each file whose content matched, and a file whose
identity has not changed since is not read again (a write that keeps size and mtime, or
sets them back, goes unseen: the limit of this economy). Requirements behind an extra
are not followed. Prints one JSON object:
``{"missing": [dist, ...], "damaged": {dist: {"missing_files": N, "changed_files": N,
"examples": [...]}}, "checked_dists": N, "checked_files": N, "hashed_files": N,
"hashed_bytes": N}``.
"""

import base64
import csv
import hashlib
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


def identity(st):
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def digest(path, algorithm):
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()


def check(dist, known, verified, tally):
    """(missing files, files whose content differs, files checked) of one distribution;
    ``known``: identities verified before; ``verified``: those verified now."""
    record = dist.read_text("RECORD")
    if record is None:  # installed without a RECORD: nothing to check it against
        return [], [], 0
    base = str(dist.locate_file(""))
    gone = []
    changed = []
    checked = 0
    for row in csv.reader(record.splitlines()):
        if not row or row[0].endswith(".pyc") or "__pycache__" in row[0]:
            continue
        checked += 1
        path = os.path.normpath(os.path.join(base, row[0]))
        try:
            st = os.stat(path)
        except OSError:
            gone.append(row[0])
            continue
        algorithm, _, expected = (row[1] if len(row) > 1 else "").partition("=")
        size = row[2] if len(row) > 2 else ""
        if size.isdigit() and int(size) != st.st_size:
            changed.append(row[0])
            continue
        if not expected or algorithm not in hashlib.algorithms_guaranteed:
            continue  # RECORD gives no hash (its own line, INSTALLER, direct_url.json)
        ident = identity(st)
        if known.get(path) == ident:
            verified[path] = ident
            continue
        try:
            ok = digest(path, algorithm) == expected
        except OSError:
            ok = False
        tally["hashed_files"] += 1
        tally["hashed_bytes"] += st.st_size
        if ok:
            verified[path] = ident
        else:
            changed.append(row[0])
    return gone, changed, checked


def load_known(path):
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_known(path, verified):
    folder = os.path.dirname(path) or "."
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(verified, fh)
        os.replace(tmp, path)
    except OSError:
        pass  # the next check hashes again: slower, never wrong


def main():
    args = sys.argv[1:]
    cache = None
    if args[:1] == ["--verified"]:
        cache, args = args[1], args[2:]
    known = load_known(cache) if cache else {}
    asked = {canon(n): n for n in args}
    dists = closure(asked)
    missing = [asked[n] for n in asked if dists.get(n) is None]
    damaged = {}
    verified = {}  # type: dict[str, list[int]]
    tally = {"hashed_files": 0, "hashed_bytes": 0}
    checked_files = 0
    checked_dists = 0
    for name, dist in sorted(dists.items()):
        if dist is None:
            continue
        gone, changed, checked = check(dist, known, verified, tally)
        checked_files += checked
        checked_dists += 1
        if gone or changed:
            label = asked.get(name) or dist.metadata["Name"] or name
            damaged[label] = {
                "missing_files": len(gone),
                "changed_files": len(changed),
                "examples": (gone + changed)[:3],
                "dist": dist.metadata["Name"] or name,
            }
    if cache and verified != known:
        save_known(cache, verified)
    print(
        json.dumps(
            {
                "missing": missing,
                "damaged": damaged,
                "checked_dists": checked_dists,
                "checked_files": checked_files,
                **tally,
            }
        )
    )


main()
