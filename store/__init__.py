"""RocketMQ-style storage, protocol-agnostic: one CommitLog, ConsumeQueues, IndexFiles (docs/internals.md)."""
from codec.remoting import message
from store.config import TopicConfig, TopicTable
from store.core import (AppendResult, MessageTooLarge, ReadResult, Store, StoreConfig, StoreError,
                        open)
from codec.remoting.message import Message, StoredMessage

__all__ = ["open", "Store", "StoreConfig", "Message", "StoredMessage", "AppendResult", "ReadResult",
           "StoreError", "MessageTooLarge", "TopicConfig", "TopicTable", "message"]
