"""KIP-467 refusals of a produce partition: INVALID_RECORD with one `record_errors` entry per bad
record (`batch_index` within its batch) and Kafka's summary message; nothing of the partition is
stored. The delayed-delivery headers are checked here by the one delay rule every protocol uses
(semantics.routing.delay_refusal, docs/mapping.md "Delay rule")."""
from __future__ import annotations

from codec import schema_frames, schema_ids
from codec.kafka import records
from codec.kafka.schema import DecodeError
from interop.inner_batch import routing_headers
from semantics import routing


def delay_record_errors(batches, now_ms: int, levels: routing.DelayLevels) -> list[dict]:
    """A record error for each record whose DELAY or __STARTDELIVERTIME header the delay rule
    refuses (an empty or null value too)."""
    out = []
    for batch in batches:
        try:
            found = routing_headers(batch)
        except (DecodeError, ValueError):
            continue  # an unreadable batch is refused by the store path (CORRUPT_MESSAGE)
        bad, verdicts = {}, {}  # verdicts: one check per distinct header (a batch mostly repeats one)
        for i, name, value in found:
            if (name, value) not in verdicts:
                text = "" if value is None else bytes(value).decode("utf-8", "replace")
                verdicts[name, value] = routing.delay_refusal({name: text}, now_ms, levels)
            refused = verdicts[name, value]
            if refused is not None:
                bad.setdefault(i, str(refused))
        out += [{"batch_index": i, "batch_index_error_message": why} for i, why in sorted(bad.items())]
    return out


def invalid_records(index: int, errors_: list[dict], code: int, log_start_offset: int) -> dict:
    """The partition response refusing its records, with Kafka's message: the count and the first
    three record errors."""
    shown = ", ".join(f"RecordError(batchIndex={e['batch_index']}, message='{e['batch_index_error_message']}')"
                      for e in errors_[:3])
    why = (f"One or more records have been rejected due to {len(errors_)} record errors in total, and only "
           f"showing the first three errors at most: [{shown}]")
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": log_start_offset, "error_message": why, "record_errors": errors_}


async def schema_record_errors(app, rule, batches, topic: str) -> list[dict]:
    """KIP-467 `record_errors` for the records the topic's schema validation refuses (one per record,
    indexed within its batch). At the id level a batch whose records are all framed is first read by
    codec.schema_ids (its distinct ids only); when one of them is refused, or the batch is small or
    odd, the 5-byte heads of codec.schema_frames say which records are refused and why."""
    full = (rule.key is not None and rule.key.full) or (rule.value is not None and rule.value.full)
    errors_ = []
    for batch in batches:
        try:
            # an uncompressed section read in place (records_bytes copies it); columns copies it if it must
            payload = batch.records_bytes() if batch.compression != records.NONE else memoryview(batch.raw)[records.HEADER_SIZE:]
            if not full:  # a batch whose records are all framed with accepted ids: found without a loop per record
                ids = schema_ids.distinct_ids(payload, batch.record_count, rule.key is not None, rule.value is not None)
                if ids is not None and app.schema_validation.accepts_ids(topic, rule, *ids):
                    continue
            keys, values = schema_frames.columns(payload, batch.record_count, rule.key is not None,
                                                 rule.value is not None, None if full else 5)
        except (DecodeError, ValueError) as exc:
            return [{"batch_index": 0, "batch_index_error_message": f"records cannot be read: {exc}"}]
        errors_ += [{"batch_index": i, "batch_index_error_message": why}
                    for i, why in await app.schema_validation.refusals_learning("kafka", topic, rule, keys, values)]
    return errors_
