"""A client for the package index's JSON simple API (PEP 691), metadata files included
(PEP 658/714), so a version list or a wheel's ``Requires-Dist`` costs one small request.

The index is the user's: ``UV_DEFAULT_INDEX``, ``UV_INDEX_URL``, ``PIP_INDEX_URL``, else
PyPI. Requests run in-process with urllib (no subprocess) and are memoised per run.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.parser import Parser
from functools import lru_cache

from packaging.utils import canonicalize_name

from vllmdiag.errors import VllmdiagError

DEFAULT_INDEX = "https://pypi.org/simple"
ACCEPT = "application/vnd.pypi.simple.v1+json"
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class IndexFile:
    """One distribution file as the index lists it."""

    filename: str
    url: str
    requires_python: str | None
    upload_time: str | None
    yanked: bool
    has_metadata: bool

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")


@dataclass(frozen=True)
class Project:
    name: str
    index_url: str
    files: tuple[IndexFile, ...]
    versions: tuple[str, ...]


def configured_index() -> str:
    """The index the user configured for uv or pip, else PyPI."""
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        value = os.environ.get(var, "").strip()
        if value:
            return value.rstrip("/")
    return DEFAULT_INDEX


def project(name: str, index_url: str | None = None) -> Project:
    return _project(canonicalize_name(name), (index_url or configured_index()).rstrip("/"))


@lru_cache(maxsize=256)
def _project(name: str, index: str) -> Project:
    url = f"{index}/{name}/"
    text = _get(url, accept=ACCEPT, what=f"the index page of {name}")
    try:
        data = json.loads(text)
    except ValueError:
        raise VllmdiagError(
            f"the index at {index} did not answer in the JSON simple API (PEP 691)",
            hint="use an index that serves application/vnd.pypi.simple.v1+json",
        ) from None
    files = tuple(_file(raw, url) for raw in data.get("files", []))
    return Project(name, index, files, tuple(data.get("versions", ())))


def _file(raw: dict[str, object], page_url: str) -> IndexFile:
    yanked = raw.get("yanked", False)
    meta = raw.get("core-metadata", raw.get("dist-info-metadata", False))
    rp = raw.get("requires-python")
    up = raw.get("upload-time")
    return IndexFile(
        filename=str(raw["filename"]),
        url=urllib.parse.urljoin(page_url, str(raw["url"])),
        requires_python=str(rp) if rp else None,
        upload_time=str(up) if up else None,
        yanked=bool(yanked),
        has_metadata=bool(meta),
    )


def metadata(file: IndexFile) -> str:
    """The file's core metadata (``METADATA``): ``<url>.metadata`` (PEP 658) where the
    index serves it, else read out of the wheel by HTTP range requests. A whole wheel is
    never downloaded for this."""
    if not file.is_wheel:
        raise VllmdiagError(
            f"{file.filename} is not a wheel: its metadata cannot be read without building",
            hint="the consumer check reads Requires-Dist from wheels",
        )
    return _metadata(file.url.split("#", 1)[0])


@lru_cache(maxsize=512)
def _metadata(url: str) -> str:
    try:
        return _get(url + ".metadata", accept="*/*", what=url)
    except VllmdiagError:
        from vllmdiag.window.remote_zip import wheel_metadata

        return wheel_metadata(url)


def requires_dist(metadata_text: str) -> list[str]:
    return list(Parser().parsestr(metadata_text, headersonly=True).get_all("Requires-Dist", []))


def _get(url: str, *, accept: str, what: str) -> str:
    req = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "vllmdiag"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            body: bytes = resp.read()
            return body.decode("utf-8")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise VllmdiagError(
                f"{what}: not found on the index ({url})",
                hint="check the package name and the configured index "
                "(UV_DEFAULT_INDEX / UV_INDEX_URL / PIP_INDEX_URL)",
            ) from None
        raise VllmdiagError(f"{what}: the index answered HTTP {exc.code} ({url})") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise VllmdiagError(
            f"{what}: cannot reach the index ({url}): {exc}",
            hint="check the network or point UV_DEFAULT_INDEX at a reachable index",
        ) from None
