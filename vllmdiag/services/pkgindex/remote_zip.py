"""Read a wheel's member list and single members over HTTP range requests, without
downloading the wheel: the zip's central directory sits at its end, and each member can
be fetched by offset. Used when an index serves no ``.metadata`` file (PEP 658), and for
the static hint of which modules a wheel ships."""

from __future__ import annotations

import re
import struct
import urllib.error
import zlib
from dataclasses import dataclass
from functools import lru_cache

from vllmdiag.errors import VllmdiagError
from vllmdiag.services import redact
from vllmdiag.services.pkgindex import http_client

TAIL = 65536 + 22


@dataclass(frozen=True)
class Member:
    name: str
    method: int
    compressed: int
    size: int
    offset: int
    crc: int = 0  # CRC-32 of the content: equal members of two wheels need one read


def _get_range(url: str, spec: str) -> tuple[bytes, int]:
    """Bytes for ``Range: bytes=spec`` and the file's total size."""
    try:
        resp = http_client.get(url, byte_range=spec)
    except urllib.error.HTTPError as exc:
        raise VllmdiagError(f"cannot read {redact.url(url)}: HTTP {exc.code}") from None
    m = re.search(r"/(\d+)$", resp.content_range)
    if resp.status != 206 or m is None:
        raise VllmdiagError(f"{redact.url(url)}: the server does not answer range requests")
    return resp.body, int(m.group(1))


@lru_cache(maxsize=64)
def members(url: str) -> tuple[Member, ...]:
    tail, total = _get_range(url, f"-{TAIL}")
    at = tail.rfind(b"PK\x05\x06")
    if at < 0:
        raise VllmdiagError(f"{url}: no zip end record (zip64 or not a zip)")
    count, cd_size, cd_offset = struct.unpack("<HII", tail[at + 10 : at + 20])
    if count == 0xFFFF or cd_offset == 0xFFFFFFFF or cd_size == 0xFFFFFFFF:
        raise VllmdiagError(f"{url}: a zip64 archive (not read here)")
    start_in_tail = cd_offset - (total - len(tail))
    if start_in_tail >= 0:
        cd = tail[start_in_tail : start_in_tail + cd_size]
    else:
        cd, _ = _get_range(url, f"{cd_offset}-{cd_offset + cd_size - 1}")
    out = []
    pos = 0
    for _ in range(count):
        if cd[pos : pos + 4] != b"PK\x01\x02":
            break
        (method,) = struct.unpack("<H", cd[pos + 10 : pos + 12])
        crc, comp, size = struct.unpack("<III", cd[pos + 16 : pos + 28])
        n, e, c = struct.unpack("<HHH", cd[pos + 28 : pos + 34])
        (offset,) = struct.unpack("<I", cd[pos + 42 : pos + 46])
        name = cd[pos + 46 : pos + 46 + n].decode("utf-8", "replace")
        out.append(Member(name, method, comp, size, offset, crc))
        pos += 46 + n + e + c
    return tuple(out)


def read_member(url: str, member: Member) -> bytes:
    # The local header repeats name and extra with their own lengths: read generously.
    end = member.offset + 30 + len(member.name.encode()) + 1024 + member.compressed
    blob, _ = _get_range(url, f"{member.offset}-{end}")
    n, e = struct.unpack("<HH", blob[26:30])
    data = blob[30 + n + e : 30 + n + e + member.compressed]
    if member.method == 0:
        return data
    if member.method == 8:
        return zlib.decompress(data, -15)
    raise VllmdiagError(f"{url}: {member.name} uses zip method {member.method}")


def wheel_metadata(url: str) -> str:
    """``*.dist-info/METADATA`` of the wheel at ``url``."""
    for m in members(url):
        if re.fullmatch(r"[^/]+\.dist-info/METADATA", m.name):
            return read_member(url, m).decode("utf-8", "replace")
    raise VllmdiagError(f"{url}: no .dist-info/METADATA in the wheel")
