"""The package index, read in-process: projects and their files (PEP 691), wheel metadata
(PEP 658) and single files out of wheels by HTTP range requests, with the index's
credentials kept out of everything shown; which releases are candidates; and what a
release's wheels say about ``MODULE.ATTR`` without installing it (the static read)."""

from vllmdiag.services.pkgindex.config import DEFAULT_INDEX, configured_index, custom_index, uv_env
from vllmdiag.services.pkgindex.remote_zip import Member, members, read_member, wheel_metadata
from vllmdiag.services.pkgindex.simple_api import (
    IndexFile,
    Project,
    clear_caches,
    metadata,
    project,
    requires_dist,
)
from vllmdiag.services.pkgindex.target_python import check_python
from vllmdiag.services.pkgindex.versions import Candidate, candidates, file_version, nearby
from vllmdiag.services.pkgindex.wheel_source import (
    Presence,
    StaticAnswer,
    read_version,
    read_versions,
)
from vllmdiag.services.pkgindex.wheels import pick_wheel

__all__ = [
    "DEFAULT_INDEX",
    "Candidate",
    "IndexFile",
    "Member",
    "Presence",
    "Project",
    "StaticAnswer",
    "candidates",
    "check_python",
    "clear_caches",
    "configured_index",
    "custom_index",
    "file_version",
    "members",
    "metadata",
    "nearby",
    "pick_wheel",
    "project",
    "read_member",
    "read_version",
    "read_versions",
    "requires_dist",
    "uv_env",
    "wheel_metadata",
]
