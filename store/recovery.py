"""Recovery (RocketMQ's recoverNormally/Abnormally + ReputMessageService): validate the CommitLog from
the older checkpoint, cut a bad tail, and replay every valid entry past the checkpoints as a
`DispatchRequest` through the same dispatchers that live appends feed.

Two steps, so that dispatchers can be registered in between:
- `load` (at open): cut every ConsumeQueue at the ConsumeQueue checkpoint and move min offsets to
  the CommitLog's start, so the queues describe exactly the checkpointed state;
- `replay` (Store.recover): the index dispatcher gets entries from the index checkpoint, every
  other dispatcher (ConsumeQueues, filtered views, ...) from the ConsumeQueue checkpoint: views keep
  their units in consumequeue/, under its checkpoint.
"""
from __future__ import annotations

import logging

from codec.remoting import message as M
from store.commitlog import BLANK_MIN, SIZE_MAGIC, CommitLog
from store.dispatch import REWRITE, request_of
from store.flush import read_checkpoint
from store.segments import release

log = logging.getLogger("rocketgate.store")

CHUNK = 4 << 20  # CommitLog bytes read at a time
BATCH = 1024  # requests handed to the dispatchers at a time


def start_offset(cl: CommitLog, directory: str) -> int:
    """Where to start re-dispatching for a derived directory: its checkpoint, or the start of the
    CommitLog without one, or the start of the last file if the CommitLog is shorter than the
    checkpoint says (its tail was lost: validate the last file again)."""
    ck = read_checkpoint(directory)
    if ck > cl.end:
        ck = cl.file_start(max(cl.end - 1, 0))
    return max(ck, cl.begin)


def load(cl: CommitLog, queues, index) -> tuple[int, int]:
    """Cut the ConsumeQueues back to their checkpoint; (ConsumeQueue start, index start) for replay."""
    cq_start, index_start = start_offset(cl, queues.dir), start_offset(cl, index.dir)
    queues.truncate_phys(cq_start)
    release(queues.advance_min(cl.begin))
    return cq_start, index_start


def replay(cl: CommitLog, cq_start: int, index_start: int, index_dispatcher, dispatchers, feed) -> None:
    """Validate from min(cq_start, index_start) to the end and `feed(targets, requests)` each valid
    entry; cut the CommitLog where validation fails."""
    others = [d for d in dispatchers if d is not index_dispatcher]
    only_index = [index_dispatcher]
    pos = start = min(cq_start, index_start)
    end = cl.end
    scanned = 0
    chunk, chunk_at = b"", 0
    reason = None
    fs = cl.file_size
    batch: list = []
    targets = None
    while pos < end:
        fstart = pos - pos % fs
        if fstart not in cl.fds:
            reason = "missing CommitLog file"
            break
        if not (chunk_at <= pos and pos + BLANK_MIN <= chunk_at + len(chunk)):
            chunk, chunk_at = cl.read(pos, min(CHUNK, fstart + fs - pos)), pos
        if pos + BLANK_MIN > chunk_at + len(chunk):
            reason = "torn entry header"
            break
        size, magic = SIZE_MAGIC.unpack_from(chunk, pos - chunk_at)
        if magic == M.BLANK_MAGIC and size == fstart + fs - pos:
            pos = fstart + fs
            continue
        if magic != M.MAGIC_V1:
            reason = f"bad magic code 0x{magic:08x}"
            break
        if size < M.FIXED_SIZE or pos + size > fstart + fs:
            reason = f"bad entry size {size}"
            break
        if pos + size > chunk_at + len(chunk):
            chunk, chunk_at = cl.read(pos, max(size, min(CHUNK, fstart + fs - pos))), pos
            if len(chunk) < size:
                reason = "torn entry"
                break
        try:
            msg = M.decode(chunk, pos - chunk_at)
        except M.MessageFormatError as exc:
            reason = str(exc)
            break
        if M.body_crc(msg.body) != msg.body_crc:
            reason = "body CRC mismatch"
            break
        if msg.physical_offset != pos:
            reason = f"entry says it is at {msg.physical_offset}"
            break
        want = (dispatchers if pos >= index_start else others) if pos >= cq_start else only_index
        if want is not targets or len(batch) >= BATCH:
            if batch:
                feed(targets, batch)
            batch, targets = [], want
        batch.append(request_of(msg))
        cl.last_ts = max(cl.last_ts, msg.store_timestamp)
        scanned += 1
        pos += size
    if batch:
        feed(targets, batch)
    if pos < end:
        log.warning("recovery: cut the CommitLog at offset %d (%s): dropped %d bytes up to %d",
                    pos, reason, end - pos, end)
        cl.truncate(pos)
    elif pos > end:  # the last file ended with a blank marker
        cl.end = pos
    if scanned:
        log.info("recovery: validated %d entries from offset %d", scanned, start)


def rewrites_apart(feed, cq_dispatcher):
    """The replay's feed: a rewrite entry (`Store.rewrite`, property REWRITE) takes no new offsets
    and is no new message, so only the ConsumeQueue dispatcher gets it (`rewrite`); the others go on
    to `feed(dispatchers, requests)` in order."""
    def split(dispatchers, requests) -> None:
        plain = []
        for r in requests:
            if r.properties and REWRITE in r.properties:
                if plain:
                    feed(dispatchers, plain)
                plain = []
                if cq_dispatcher in dispatchers:
                    cq_dispatcher.rewrite(r)
            else:
                plain.append(r)
        if plain:
            feed(dispatchers, plain)
    return split
