"""Report what distributions declare they need, and what of it is installed (stdlib only).

argv: distribution names. For each one installed: its version, the ``Requires-Dist``
lines of its METADATA, and the installed version of every distribution those lines name
(None: not installed); with the leg's marker environment (PEP 508), so the caller can
tell which requirements apply here. Prints one JSON object:
``{"markers": {...}, "dists": {name: {"version": V, "requires": [...]} | null},
"installed": {canonical name: version | null}}``.
"""

import json
import os
import platform
import re
import sys
from importlib import metadata

NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canon(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def markers():
    """The PEP 508 marker environment of this interpreter."""
    impl = sys.implementation
    info = impl.version
    impl_version = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        impl_version += info.releaselevel[0] + str(info.serial)
    return {
        "implementation_name": impl.name,
        "implementation_version": impl_version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def main():
    dists = {}  # type: dict[str, object]
    installed = {}  # type: dict[str, object]
    for name in sys.argv[1:]:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            dists[name] = None
            continue
        requires = list(dist.requires or [])
        dists[name] = {"version": dist.version, "requires": requires}
        for line in requires:
            m = NAME.match(line)
            if m:
                installed.setdefault(canon(m.group(1)), version(m.group(1)))
    print(json.dumps({"markers": markers(), "dists": dists, "installed": installed}))


main()
