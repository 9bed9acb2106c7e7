"""Report a leg's runtime stack without importing torch or vllm (stdlib only)."""

import json
import platform
import re
import sys
from importlib import metadata

DISTS = (
    "vllm",
    "torch",
    "transformers",
    "flashinfer-python",
    "nvidia-cutlass-dsl",
    "triton",
)


def version(dist):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def torch_cuda():
    try:
        files = metadata.distribution("torch").files or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).replace("\\", "/") == "torch/version.py":
            with open(f.locate(), encoding="utf-8") as fh:
                text = fh.read()
            # cuda = '12.8', or with an annotation: cuda: Optional[str] = '13.0'
            m = re.search(r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
            return m.group(1) if m else None
    return None


out = {d: version(d) for d in DISTS}
out["torch_cuda"] = torch_cuda()
out["python"] = platform.python_version()
out["implementation"] = sys.implementation.name
out["platform"] = platform.platform()
print(json.dumps(out))
