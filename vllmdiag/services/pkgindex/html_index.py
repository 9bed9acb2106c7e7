"""A project's page on a PEP 503 (HTML) simple index, over HTTP(S) or from a ``file://``
directory laid out the same way (``<index>/<project>/index.html``): the shape of the
per-commit wheel indexes vLLM publishes, which serve no JSON API and no upload times.

Read in-process (no subprocess); ``None`` when the index has no page for the project.
"""

from __future__ import annotations

import html.parser
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from packaging.utils import canonicalize_name

from vllmdiag.errors import VllmdiagError
from vllmdiag.services import redact
from vllmdiag.services.pkgindex import http_client
from vllmdiag.services.pkgindex.simple_api import IndexFile


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append(dict(attrs))


def page_url(index_url: str, name: str) -> str:
    return f"{index_url.rstrip('/')}/{canonicalize_name(name)}/"


def project_files(index_url: str, name: str) -> tuple[IndexFile, ...] | None:
    """The files ``index_url`` lists for ``name``; None when it has no page for it (HTTP
    404, or no such directory in a file index)."""
    page = page_url(index_url, name)
    text = _read(page)
    if text is None:
        return None
    parser = _Anchors()
    parser.feed(text)
    files = []
    for link in parser.links:
        href = link.get("href")
        if not href:
            continue
        url = urllib.parse.urljoin(page, href)
        base = urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1]
        files.append(
            IndexFile(
                filename=urllib.parse.unquote(base),
                url=url,
                requires_python=link.get("data-requires-python") or None,
                upload_time=None,
                yanked="data-yanked" in link,
                has_metadata=False,
            )
        )
    return tuple(files)


def _read(page: str) -> str | None:
    parts = urllib.parse.urlsplit(page)
    if parts.scheme == "file":
        path = Path(urllib.request.url2pathname(parts.path)) / "index.html"
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise VllmdiagError(f"cannot read the index page {path}: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise VllmdiagError(
            f"not an index URL: {redact.url(page)!r}",
            hint="give an http(s):// or file:// URL",
        )
    try:
        return http_client.get(page, accept="text/html").body.decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        if exc.code in (403, 404):  # S3 behind a CDN answers 403 for a missing key
            return None
        raise VllmdiagError(
            f"the wheel index answered HTTP {exc.code} at {redact.url(page)}",
            hint="check the --wheels template and the network",
        ) from None
