"""The `_schemas` topic in the store: one compacted queue of Kafka record batches, the registry's only
state. `catch_up` feeds every record not yet applied to the `RegistryState` (at start: the whole
replay; later: what this gateway or another writer appended since); `append` writes one batch of
records (one CommitLog entry, so a write's records land together or not at all)."""
from __future__ import annotations

import logging
import struct
import time

from codec.kafka import records
from codec.kafka.schema import DecodeError
from codec.remoting.message import INNER_BATCH_FLAG
from interop.inner_batch import entry_message, index_info
from store.errors import MessageTooLarge, StoreError
import semantics.schema_registry.errors as err
from semantics.flow_control import append_in_turn
from semantics.replication import NotLeader
from semantics.schema_registry.state import RegistryState

log = logging.getLogger("rocketgate.schema_registry")

TOPIC = "_schemas"
QUEUE = 0
TOPIC_CONFIGS = {"cleanup.policy": "compact"}


def ensure_topic(store) -> None:
    """Create `_schemas` (1 partition, compacted) when it does not exist yet."""
    if store.topics.get(TOPIC) is None:
        store.topics.create(TOPIC, read_queues=1, write_queues=1, attributes=dict(TOPIC_CONFIGS))


class SchemasLog:
    """Reads and writes `_schemas`; `applied` is the queue offset up to which `state` has applied."""

    def __init__(self, store, state: RegistryState, flow=None, durable=None, replicated=None) -> None:
        self.store = store
        self.state = state
        self.flow = flow
        self.durable = durable  # async (CommitLog end offset) -> None: sync flush waits for the disk
        self.replicated = replicated  # async (topic, queue, end queue offset) -> None: ISR waits
        self.applied = 0

    def end(self) -> int:
        return self.store.max_offset(TOPIC, QUEUE) if self.store.topics.get(TOPIC) is not None else 0

    def catch_up(self) -> int:
        """Apply every record appended since the last call; the number applied."""
        end = self.end()
        if end <= self.applied:
            return 0
        count = 0
        for offset, msg in self.store.iterate(TOPIC, QUEUE, self.applied, end):
            for key, value in _records_of(msg):
                self.state.apply(key, value)
                count += 1
            self.applied = max(self.applied, offset + max(1, msg.batch_count if msg.sys_flag & INNER_BATCH_FLAG
                                                         else 1))
        self.applied = max(self.applied, end)
        return count

    async def append(self, rows: list[tuple[bytes, bytes | None]]) -> None:
        """Append `rows` (key, value or None for a tombstone) as one batch, durable and replicated as
        the gateway's flush mode and the queue's in-sync replicas ask, then apply them."""
        ensure_topic(self.store)
        now = int(time.time() * 1000)
        batch = records.parse_batches(records.build_batch([(now, k, v, []) for k, v in rows],
                                                          base_timestamp=now))[0]
        msg = entry_message(TOPIC, QUEUE, batch, index_info(batch), {}, now, False)
        try:
            if self.flow is not None:
                [result] = await append_in_turn(self.flow, self.store, [msg])
            else:
                [result] = self.store.append_many([msg])
            if self.durable is not None:
                await self.durable(result.end_offset)
            if self.replicated is not None:
                await self.replicated(TOPIC, QUEUE, result.queue_offset + result.count)
        except MessageTooLarge as exc:  # a schema the body limit let through, above --max-message-bytes
            raise err.invalid_schema(f"Invalid schema: too large for the store ({exc})") from None
        except (StoreError, OSError) as exc:
            raise err.store_error(str(exc)) from None
        except NotLeader:
            raise err.RegistryError(500, 50003, "the lead of _schemas moved during the write; retry") from None
        finally:
            self.catch_up()  # whatever reached the log is applied, even when the wait failed


def _records_of(msg) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of each record of a stored entry: a Kafka batch's records (control batches
    skipped), or a plain RocketMQ message's KEYS and body; an undecodable batch is logged, skipped."""
    if not msg.sys_flag & INNER_BATCH_FLAG:
        keys = (msg.properties or {}).get("KEYS")
        return [(keys.encode() if keys else None, msg.body)]
    try:
        out = []
        for b in records.parse_batches(msg.body):
            if b.attributes & records.CONTROL:
                continue
            out += [(r.key, r.value) for r in records.decode_records(b.records_bytes(), b.record_count)]
        return out
    except (DecodeError, ValueError, IndexError, struct.error) as exc:
        log.warning("_schemas entry at %d skipped: %s", msg.physical_offset, exc)
        return []
