"""HTTP GET and range requests to the package index, fast and with its credentials.

A window reads a few hundred small pieces of wheels; opened one connection each, their
TLS handshakes cost more CPU than the reading. So connections are kept alive and reused
(one pool per host), each host name is looked up once (parallel look-ups of one name
can stall for the resolver's whole timeout), and one TLS context serves all. Basic auth
is sent to a remembered realm only (:mod:`vllmdiag.services.pkgindex.credentials`); redirects are
followed, the proxy from the environment is honoured.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import Message
from functools import lru_cache
from typing import Any

from vllmdiag.errors import VllmdiagError
from vllmdiag.services import redact
from vllmdiag.services.pkgindex.credentials import auth_header, remember

TIMEOUT_S = 60.0
_REDIRECTS = (301, 302, 303, 307, 308)
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)

Key = tuple[str, str, int, str | None]  # scheme, host, port, proxy


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_range: str


def get(url: str, *, accept: str = "*/*", byte_range: str | None = None) -> Response:
    """One GET; raises :class:`urllib.error.HTTPError` for an HTTP error status and
    :class:`VllmdiagError` when the server cannot be reached. With ``byte_range``, an
    answer that is not 206 comes back with an empty body (the whole file is not read)."""
    target = remember(url)
    try:
        for _ in range(6):
            headers = {"Accept": accept, "User-Agent": "vllmdiag"}
            if byte_range is not None:
                headers["Range"] = f"bytes={byte_range}"
            auth = auth_header(target)
            if auth is not None:
                headers["Authorization"] = auth
            status, head, body = _exchange(target, headers, want_body=byte_range is None)
            if status in _REDIRECTS and head.get("Location"):
                target = remember(urllib.parse.urljoin(target, head["Location"]))
                continue
            if status >= 400:
                raise urllib.error.HTTPError(target, status, head.get("Reason", ""), head, None)
            if byte_range is not None and status != 206:
                return Response(status, b"", "")
            return Response(status, body, head.get("Content-Range", ""))
        raise VllmdiagError(f"{redact.url(url)}: too many redirects")
    except urllib.error.HTTPError:
        raise
    except (TimeoutError, OSError, http.client.HTTPException, ValueError) as exc:
        raise VllmdiagError(
            f"cannot reach {redact.url(target)}: {redact.text(str(exc))}",
            hint="check the network, or point UV_DEFAULT_INDEX at a reachable index",
        ) from None


def _exchange(url: str, headers: dict[str, str], *, want_body: bool) -> tuple[int, Message, bytes]:
    """One request on a pooled connection (a fresh one if a reused one went stale)."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {redact.url(url)}")
    host = parts.hostname or ""
    port = parts.port or (443 if scheme == "https" else 80)
    proxy = _proxy(scheme, host)
    key: Key = (scheme, host, port, proxy)
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    if proxy is not None and scheme == "http":
        path = urllib.parse.urlunsplit((scheme, parts.netloc, parts.path or "/", parts.query, ""))
    for attempt in range(2):
        conn, reused = _POOL.take(key)
        try:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            status = resp.status
            # Read the body unless it is a whole file nobody asked for (a 200 to a range
            # request): then the connection cannot be reused.
            read = want_body or status == 206 or status in _REDIRECTS or status >= 400
            body = resp.read() if read else b""
        except _STALE:
            conn.close()
            if reused and attempt == 0:
                continue
            raise
        except BaseException:
            conn.close()
            raise
        if read and not resp.will_close:
            _POOL.give(key, conn)
        else:
            conn.close()
        return status, resp.msg, body
    raise http.client.HTTPException("no connection")  # not reached


def _proxy(scheme: str, host: str) -> str | None:
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy


class _Pool:
    """Idle keep-alive connections per (scheme, host, port, proxy)."""

    def __init__(self) -> None:
        self._idle: dict[Key, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def take(self, key: Key) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop(), True
        return _new_connection(key), False

    def give(self, key: Key, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.setdefault(key, []).append(conn)


_POOL = _Pool()


def _new_connection(key: Key) -> http.client.HTTPConnection:
    scheme, host, port, proxy = key
    target_host, target_port = host, port
    if proxy is not None:
        p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        target_host, target_port = p.hostname or "", p.port or 80
    conn: http.client.HTTPConnection
    if scheme == "https":
        conn = http.client.HTTPSConnection(
            target_host, target_port, timeout=TIMEOUT_S, context=_tls_context()
        )
        if proxy is not None:
            conn.set_tunnel(host, port)
    else:
        conn = http.client.HTTPConnection(target_host, target_port, timeout=TIMEOUT_S)
    conn._create_connection = _connect  # type: ignore[attr-defined]
    return conn


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    # One for all connections: building one loads the CA store (~40 ms of CPU).
    return ssl.create_default_context()


_ADDRESSES: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
_DNS_LOCK = threading.Lock()


def _connect(
    address: tuple[str, int], timeout: float | None = None, source: Any = None
) -> socket.socket:
    """``socket.create_connection`` with each host name looked up once per run."""
    with _DNS_LOCK:
        infos = _ADDRESSES.get(address)
        if infos is None:
            infos = _ADDRESSES[address] = list(
                socket.getaddrinfo(*address, type=socket.SOCK_STREAM)
            )
    error: OSError | None = None
    for family, kind, proto, _, addr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not None:
                sock.settimeout(timeout)
            sock.connect(addr)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error or OSError(f"no address for {address[0]}")
