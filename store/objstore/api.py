"""The object-store contract the tier and diskless topics write through.

Every call blocks (a network round trip); callers run them in a worker thread (`trio.to_thread`) so the
event loop never waits on the object store. Errors are the three below, so callers decide retry vs give
up without knowing the server."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol, runtime_checkable
from urllib.parse import urlparse


class ObjectStoreError(Exception):
    """The store could not answer (down, timed out, 5xx, throttled): worth retrying with backoff."""


class NotFound(ObjectStoreError):
    """The key does not exist (or the bucket is gone): retrying will not help."""


class PreconditionFailed(ObjectStoreError):
    """A conditional write lost: the key already exists (`put(..., if_absent=True)`)."""


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    etag: str


@dataclass(frozen=True)
class TierLocation:
    """Where a gateway's objects live: `s3://BUCKET/PREFIX` split once."""
    bucket: str
    prefix: str  # "" or ends with "/"

    @classmethod
    def parse(cls, url: str) -> "TierLocation":
        parts = urlparse(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise ValueError(f"expected s3://BUCKET/PREFIX, got {url!r}")
        prefix = parts.path.lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        return cls(parts.netloc, prefix)

    def key(self, name: str) -> str:
        return self.prefix + name


@runtime_checkable
class ObjectStore(Protocol):
    """One bucket (and prefix) of an object store. Keys are relative to the prefix."""

    def put(self, key: str, data, *, if_absent: bool = False, sha256: bytes | None = None,
            crc32c: int | None = None) -> str:
        """Write `data` (bytes, or a seekable file-like with len(): store.tier.payload.Parts) whole;
        return its etag. With `if_absent`, raise PreconditionFailed when the key exists (S3
        `If-None-Match: *`), the atomic commit manifests and index entries rely on. `crc32c` or
        `sha256`: the data's checksum when the caller has it already (the server checks the data
        against it; neither: its sha256 computed here); a mismatch is an ObjectStoreError, nothing
        is stored."""

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes [start, end) of the object (end None: to its end); NotFound when absent."""

    def head(self, key: str) -> ObjectInfo | None:
        """Size and etag, or None when absent."""

    def list(self, prefix: str = "", start_after: str = "", limit: int | None = None) -> Iterator[ObjectInfo]:
        """Every key under `prefix`, in key order; only those after `start_after` (S3 StartAfter,
        so the keys before it are not even listed), at most `limit` of them."""

    def delete(self, key: str) -> None:
        """Remove the key; deleting an absent key is not an error."""
