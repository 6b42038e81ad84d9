"""The store's exceptions, in a leaf module so every store module can raise them."""


class StoreError(Exception):
    """The store cannot do what was asked (the message is fine in principle)."""


class MessageTooLarge(StoreError):
    """Body larger than `max_message_size`."""


class EntryTooLarge(MessageTooLarge):
    """An entry (a Kafka batch: one entry) larger than a CommitLog file: it can never be stored
    (Kafka's RecordBatchTooLargeException for a batch larger than segment.bytes)."""


class StoreFull(StoreError):
    """Writes are refused for disk space: usage passed `disk_max_used_space_ratio`, or a file could
    not be allocated (ENOSPC, EDQUOT). Reads keep working; writes resume once space returns.
    `str(exc)` is RocketMQ's SERVICE_NOT_AVAILABLE remark."""
