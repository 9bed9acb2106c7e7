"""Per-commit wheel indexes: a URL template with ``{commit}`` (and optionally
``{variant}``, the CUDA variant) that names a PEP 503 index per commit, as vLLM lays out
its own (docs/ci/nightly_builds.md of vllm-project/vllm: ``https://wheels.vllm.ai/
{commit_hash}`` is the default variant, ``.../{commit_hash}/cu129``, ``.../cu130``,
``.../cpu`` the variant subdirectories; the default variant has its alias subdirectory).

Pure, but :func:`machine_variant`, which reads the driver through ``nvidia-smi``.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

from vllmdiag.errors import VllmdiagError

DEFAULT_TEMPLATES = {"vllm": "https://wheels.vllm.ai/{commit}/{variant}"}
FIELDS = frozenset({"commit", "variant"})

#: The CUDA variants vLLM builds per commit, newest first, with the least driver each
#: needs (NVIDIA's CUDA toolkit release notes: 13.0 needs 580, a 12.x build runs on any
#: driver from 525 by minor-version compatibility).
CUDA_VARIANTS = (("cu130", 580), ("cu129", 525))

_VARIANT_IN_TEXT = re.compile(r"\bcu(1\d\d)\b")


def check_template(template: str, *, where: str = "--wheels") -> frozenset[str]:
    """The template's fields; a clear error for anything but ``{commit}``/``{variant}``."""
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise VllmdiagError(
            f"not a URL template: {template!r} ({exc})",
            where=where,
            hint="e.g. https://wheels.vllm.ai/{commit}/{variant}",
        ) from None
    unknown = names - FIELDS
    if unknown or "commit" not in names:
        what = f"unknown field {{{sorted(unknown)[0]}}}" if unknown else "no {commit} in it"
        raise VllmdiagError(
            f"the wheel index template {template!r} has {what}",
            where=where,
            hint="write an index URL with {commit} (and optionally {variant}), e.g. "
            "https://wheels.vllm.ai/{commit}/{variant}",
        )
    if not re.match(r"^(https?|file)://", template):
        raise VllmdiagError(
            f"the wheel index template {template!r} is not an http(s):// or file:// URL",
            where=where,
            hint="e.g. https://wheels.vllm.ai/{commit}/{variant} or file:///srv/wheels/{commit}",
        )
    return frozenset(names)


def render(template: str, commit: str, variant: str | None) -> str:
    """The index URL of ``commit``'s wheels (``variant`` must be given if the template
    names it)."""
    names = check_template(template)
    if "variant" in names and not variant:
        raise VllmdiagError(
            f"the wheel index template {template!r} needs a variant",
            where="--variant",
            hint="give --variant (e.g. cu129, cu130 or cpu)",
        )
    return template.format(commit=commit, variant=variant or "").rstrip("/")


def fallback(template: str, commit: str) -> str | None:
    """The commit's default-variant index when the template puts the variant last
    (``.../{commit}/{variant}``): vLLM's root index of a commit, tried when the variant's
    subdirectory is absent (not every variant is built for every commit)."""
    if not template.rstrip("/").endswith("/{variant}"):
        return None
    return template.rstrip("/").removesuffix("/{variant}").format(commit=commit)


def variant_for_driver(driver: str | None) -> str:
    """The newest CUDA variant a driver runs (``580.65.06`` → cu130); ``cpu`` without a
    GPU; an error for a driver older than any variant."""
    if not driver:
        return "cpu"
    try:
        major = int(driver.split(".")[0])
    except ValueError:
        raise VllmdiagError(
            f"cannot read the NVIDIA driver version {driver!r}",
            where="nvidia-smi",
            hint="give --variant (cu129, cu130 or cpu)",
        ) from None
    for variant, least in CUDA_VARIANTS:
        if major >= least:
            return variant
    raise VllmdiagError(
        f"the NVIDIA driver {driver} is older than any CUDA variant of the wheels",
        where="nvidia-smi",
        hint="update the driver, or give --variant",
    )


def variant_in(texts: Iterable[str]) -> str | None:
    """A CUDA variant a leg names (``torch==2.9.0+cu129``, ``.../whl/cu130``), if any."""
    for text in texts:
        m = _VARIANT_IN_TEXT.search(text.replace("+", " ").replace("/", " "))
        if m:
            return f"cu{m.group(1)}"
    return None


def machine_variant() -> str:
    """The variant for this machine's driver (``cpu`` where there is no GPU)."""
    from vllmdiag.services.envs.gpu import gpu_info

    gpus = gpu_info()
    return variant_for_driver(gpus.gpus[0].driver if gpus.gpus else None)
