"""An object store (store.objstore.api.ObjectStore) in a local directory, for processes of one
machine that share it: the shards of `--shards N` keep the table topics' one catalog here
(docs/shards.md, "Table topics"). A key is a file under the root (its `/` are directories). A
write goes to a temporary file, is fsynced, then renamed into place, or with `if_absent` linked
into place: link(2) fails when the name exists, so of two processes writing the same key only
one wins, as with S3's `If-None-Match: *`. Temporary files live in `.tmp/`, never listed."""
from __future__ import annotations

import hashlib
import os
import uuid
from typing import Iterator

from store.objstore.api import NotFound, ObjectInfo, PreconditionFailed
from store.topic_journal import _fsync_dir

TMP = ".tmp"


class DirectoryObjectStore:
    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        os.makedirs(os.path.join(self.root, TMP), exist_ok=True)

    def _path(self, key: str) -> str:
        parts = key.split("/")
        if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts) or parts[0] == TMP:
            raise ValueError(f"not an object key: {key!r}")
        return os.path.join(self.root, *parts)

    def put(self, key: str, data, *, if_absent: bool = False, sha256: bytes | None = None,
            crc32c: int | None = None) -> str:
        path = self._path(key)
        body = data if isinstance(data, (bytes, bytearray, memoryview)) else data.read()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = os.path.join(self.root, TMP, uuid.uuid4().hex)
        with open(tmp, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        try:
            if if_absent:
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    raise PreconditionFailed(f"{key} exists") from None
            else:
                os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _fsync_dir(os.path.dirname(path))
        return hashlib.md5(body).hexdigest()  # noqa: S324 - an etag, as S3's for a simple put

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        try:
            with open(self._path(key), "rb") as f:
                f.seek(start)
                return f.read() if end is None else f.read(max(0, end - start))
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(key) from None

    def head(self, key: str) -> ObjectInfo | None:
        try:
            st = os.stat(self._path(key))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return ObjectInfo(key, st.st_size, f"{st.st_mtime_ns:x}-{st.st_size:x}")

    def list(self, prefix: str = "", start_after: str = "", limit: int | None = None) -> Iterator[ObjectInfo]:
        # walk only the deepest directory the prefix names
        base = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        top = os.path.join(self.root, *base.split("/")) if base else self.root
        keys = []
        for dirpath, dirnames, filenames in os.walk(top):
            if dirpath == self.root:
                dirnames[:] = [d for d in dirnames if d != TMP]
            rel = os.path.relpath(dirpath, self.root)
            for name in filenames:
                key = name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}"
                if key.startswith(prefix) and key > start_after:
                    keys.append(key)
        keys.sort()
        for key in keys[:limit] if limit is not None else keys:
            info = self.head(key)
            if info is not None:  # deleted meanwhile
                yield info

    def delete(self, key: str) -> None:
        try:
            os.unlink(self._path(key))
        except (FileNotFoundError, NotADirectoryError):
            pass

