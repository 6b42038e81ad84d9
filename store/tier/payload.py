"""A segment object's bytes as views of the CommitLog file's bytes, never joined: `Parts` is the PUT
body (a 16 MiB object used to be copied whole once more to join it), and `crc32c_sums` checksums it.

Checksums: CRC32C (hardware, ~10x SHA-256 here), the one S3 names `x-amz-checksum-crc32c` and
SeaweedFS verifies (a body that does not match is refused, BadDigest). Each view is run through
the piece's CRC and then, while it is in cache, the whole object's: the bytes come from memory once
for both (combining the pieces' CRCs into the whole's would save the second, cache-hot, pass)."""
from __future__ import annotations

import crc32c


class Parts:
    """Bytes of several buffers back to back (memoryviews of the file's bytes), as a PUT body: an
    iterable with a length, so the HTTP connection (urllib3) sends each buffer as it is, in one
    `sendall`, with a Content-Length (a file-like body is read and copied 16 KiB at a time, and
    with botocore's `Expect: 100-continue` waits a round trip first). Iterating again restarts it: a
    retried request sends it whole again."""

    def __init__(self, parts) -> None:
        self.parts = [memoryview(p) for p in parts if len(p)]
        self.size = sum(len(p) for p in self.parts)

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return iter(self.parts)

    def seek(self, offset: int, whence: int = 0) -> int:
        """botocore rewinds a body before a retry; iteration starts over anyway."""
        return 0

    def getvalue(self) -> bytes:
        """The bytes joined (tests, small objects)."""
        return b"".join(self.parts)


def crc32c_sums(parts: Parts, chunk: int) -> tuple[int, tuple]:
    """(the object's CRC32C, the hex CRC32C of each `chunk`-sized piece), one pass over the bytes."""
    whole, pieces, piece, filled = 0, [], 0, 0
    for part in parts.parts:
        at = 0
        while at < len(part):
            n = min(chunk - filled, len(part) - at)
            view = part[at:at + n]
            piece = crc32c.crc32c(view, piece)
            whole = crc32c.crc32c(view, whole)
            filled += n
            at += n
            if filled == chunk:
                pieces.append(f"{piece:08x}")
                piece, filled = 0, 0
    if filled:
        pieces.append(f"{piece:08x}")
    return whole, tuple(pieces)


def crc32c_hex(data) -> str:
    return f"{crc32c.crc32c(data):08x}"
