"""An in-process ObjectStore (store.objstore.api) for the tier's unit tests only: the system under
test in end-to-end tests is a real S3 server. It can fail on demand (`down`), count requests, and
let a test corrupt or drop objects."""
from __future__ import annotations

import hashlib
import json
import threading

from crc32c import crc32c as crc32c_of

from store.objstore.api import NotFound, ObjectInfo, ObjectStoreError, PreconditionFailed


class MemStore:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.down = False  # every call raises ObjectStoreError while set
        self.fail_puts_matching: str | None = None  # puts of keys containing this fail
        self.corrupt_puts_matching: str | None = None  # bodies of these puts arrive with a byte flipped
        self.checksums: dict[str, bytes | int | None] = {}  # key -> the sha256 (or crc32c) its last put carried
        self.requests: dict[str, int] = {}
        self.gets: list[str] = []  # the key of every get, in order
        self._lock = threading.Lock()

    def _call(self, op: str) -> None:
        with self._lock:
            self.requests[op] = self.requests.get(op, 0) + 1
        if self.down:
            raise ObjectStoreError(f"{op}: store down (injected)")

    def put(self, key: str, data, *, if_absent: bool = False, sha256: bytes | None = None,
            crc32c: int | None = None) -> str:
        self._call("put")
        data = data.getvalue() if hasattr(data, "getvalue") else data
        if self.fail_puts_matching and self.fail_puts_matching in key:
            raise ObjectStoreError(f"put {key}: failed (injected)")
        if self.corrupt_puts_matching and self.corrupt_puts_matching in key and data:
            data = bytes([data[0] ^ 1]) + bytes(data[1:])  # damaged on the way (the server gets this)
        if sha256 is not None and hashlib.sha256(data).digest() != sha256:  # as S3's BadDigest
            raise ObjectStoreError(f"put {key}: BadDigest (the body does not match its sha256)")
        if crc32c is not None and crc32c_of(data) != crc32c:
            raise ObjectStoreError(f"put {key}: BadDigest (the body does not match its crc32c)")
        self.checksums[key] = sha256 if crc32c is None else crc32c
        with self._lock:
            if if_absent and key in self.objects:
                raise PreconditionFailed(key)
            self.objects[key] = bytes(data)
        return hashlib.md5(data).hexdigest()

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        self._call("get")
        with self._lock:
            self.gets.append(key)
            if key not in self.objects:
                raise NotFound(key)
            data = self.objects[key]
        return data[start:end]

    def head(self, key: str) -> ObjectInfo | None:
        self._call("head")
        data = self.objects.get(key)
        return None if data is None else ObjectInfo(key, len(data), hashlib.md5(data).hexdigest())

    def list(self, prefix: str = "", start_after: str = "", limit: int | None = None):
        self._call("list")
        with self._lock:
            keys = sorted(k for k in self.objects if k.startswith(prefix) and k > start_after)[:limit]
        for k in keys:
            yield ObjectInfo(k, len(self.objects[k]), hashlib.md5(self.objects[k]).hexdigest())

    def delete(self, key: str) -> None:
        self._call("delete")
        with self._lock:
            self.objects.pop(key, None)

    def manifests_as_version_1(self) -> None:
        """Rewrite every manifest as the code before CRC32C wrote it: SHA-256 of objects and pieces,
        no record time bounds."""
        for key in [k for k in self.objects if k.startswith("manifests/")]:
            doc = json.loads(self.objects[key])
            doc["version"] = 1
            for seg in doc["segments"]:
                data = self.objects[seg["key"]]
                seg["sha256"] = hashlib.sha256(data).hexdigest()
                seg["chunks"] = [hashlib.sha256(data[i:i + seg["chunk"]]).hexdigest()
                                 for i in range(0, len(data), seg["chunk"])]
                for name in ("checksum", "crc32c", "min_record_ts", "max_record_ts"):
                    del seg[name]
            self.objects[key] = json.dumps(doc).encode()
