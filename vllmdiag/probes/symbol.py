"""Does ``MODULE.ATTR`` exist in this environment? Stdlib only; run by a leg's python.

Usage: python symbol.py MODULE.ATTR  (or MODULE ATTR). Prints one JSON object:
``{"status": "present"|"absent"|"module-missing"|"import-error", "detail": ...,
"version": <the distribution version of the top package, if known>}``.
Only the module itself failing to be found is ``module-missing``; any other exception
while importing (a missing dependency, a broken extension) is ``import-error``.
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback


def _split(argv: list[str]) -> tuple[str, str]:
    if len(argv) == 2:
        return argv[0], argv[1]
    module, _, attr = argv[0].rpartition(".")
    return module, attr


def _missing_is_ours(exc: ModuleNotFoundError, module: str) -> bool:
    name = getattr(exc, "name", None) or ""
    return name == module or module.startswith(name + ".")


def probe(module: str, attr: str) -> dict[str, str]:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if _missing_is_ours(exc, module):
            return {"status": "module-missing", "detail": f"{type(exc).__name__}: {exc}"}
        return {"status": "import-error", "detail": _last_lines()}
    except BaseException:
        return {"status": "import-error", "detail": _last_lines()}
    if hasattr(mod, attr):
        kind = type(getattr(mod, attr)).__name__
        return {"status": "present", "detail": f"{module}.{attr}: {kind}"}
    return {"status": "absent", "detail": f"module {module!r} has no attribute {attr!r}"}


def _last_lines() -> str:
    text = traceback.format_exc().strip().splitlines()
    return "\n".join(text[-6:])


def main() -> None:
    module, attr = _split(sys.argv[1:])
    out = probe(module, attr)
    out["module"] = module
    out["attr"] = attr
    out["python"] = ".".join(str(n) for n in sys.version_info[:3])
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
