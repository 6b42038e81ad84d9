"""Object keys and the manifest: the record that commits one sealed CommitLog file's upload.

    segments/<topic>/<queue>/<file start>-<first offset>.seg   one queue's slice of the file (store.tier.segment)
    manifests/<file start>.json                                 written last, with if_absent: the commit
    starts/<topic>.json                                         remote log start per queue; the topic incarnation
    meta/topics.json                                            the topic table (restored after a disk loss)
    meta/consumerOffset.json                                    the consumer offsets (restored likewise)

A segment key is a function of the file and the queue, so an upload retried after a crash rewrites
the same keys with the same bytes; a segment without a manifest is never read. Topic names are
percent-encoded in keys."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from urllib.parse import quote, unquote

MANIFESTS = "manifests/"
STARTS = "starts/"
TOPICS_KEY = "meta/topics.json"
OFFSETS_FILE = "consumerOffset.json"  # the store config file of consumer offsets (semantics.offsets)
OFFSETS_KEY = "meta/" + OFFSETS_FILE
VERSION = 2  # 2: segments checked by CRC32C ("checksum"), record time bounds ("min_record_ts")
READABLE_VERSIONS = (1, 2)  # version 1: SHA-256 (the "sha256" fields), no record time bounds


def segment_key(topic: str, queue_id: int, file_start: int, first: int) -> str:
    return f"segments/{quote(topic, safe='')}/{queue_id}/{file_start:020d}-{first:020d}.seg"


def manifest_key(file_start: int) -> str:
    return f"{MANIFESTS}{file_start:020d}.json"


def starts_key(topic: str) -> str:
    return f"{STARTS}{quote(topic, safe='')}.json"


def topic_of_starts_key(key: str) -> str:
    return unquote(key[len(STARTS):-len(".json")])


@dataclass(frozen=True)
class SegmentRef:
    """One committed segment as its manifest lists it."""
    topic: str
    queue_id: int
    first: int  # first queue offset
    end: int  # one past the last queue offset
    key: str
    size: int
    sha256: str  # the object's SHA-256 (checksum "sha256"); "" when checked by CRC32C
    file_start: int
    first_phys: int
    end_phys: int  # one past the last entry's CommitLog bytes
    first_ts: int
    last_ts: int
    index_at: int = 0  # where the index starts in the object (0: not recorded, read the object whole)
    chunk: int = 0  # the size of the checked pieces `chunks` lists the checksums of (0: none)
    chunks: tuple = ()
    checksum: str = "sha256"  # what `chunks` (and `crc32c` / `sha256`) hold: "crc32c" since version 2
    crc32c: str = ""  # the object's CRC32C (hex), sent with its PUT (the server checks the body)
    min_record_ts: int = -1  # the smallest and largest record timestamp (Kafka's CreateTime or
    max_record_ts: int = -1  # LogAppendTime, a RocketMQ message's born time); -1: not recorded

    @property
    def ident(self) -> str:
        """Names this object's bytes (the read cache's key): its whole checksum."""
        return self.sha256 if self.checksum == "sha256" else f"{self.crc32c}-{self.key}"


@dataclass
class Manifest:
    file_start: int
    file_size: int
    segments: list  # [SegmentRef]
    untiered: list  # topics with entries in the file that are not tiered (they keep the file local)

    def encode(self) -> bytes:
        doc = {"version": VERSION, "fileStart": self.file_start, "fileSize": self.file_size,
               "segments": [asdict(s) for s in self.segments], "untiered": sorted(self.untiered)}
        return json.dumps(doc, sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> "Manifest":
        doc = json.loads(data)
        if doc.get("version") not in READABLE_VERSIONS:
            raise ValueError(f"manifest version {doc.get('version')!r} unknown")
        return cls(int(doc["fileStart"]), int(doc["fileSize"]),
                   [SegmentRef(**{**s, "chunks": tuple(s.get("chunks") or ())}) for s in doc["segments"]],
                   list(doc.get("untiered", [])))


def file_of_manifest_key(key: str) -> int | None:
    name = key[len(MANIFESTS):]
    stem = name[:-len(".json")] if name.endswith(".json") else ""
    return int(stem) if len(stem) == 20 and stem.isdigit() else None
