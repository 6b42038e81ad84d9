"""RocketMQ-style storage, protocol-agnostic: one CommitLog, ConsumeQueues, IndexFiles (docs/internals.md)."""
from codec.remoting import message
from codec.remoting.message import Message, StoredMessage
from store.api import (AppendResult, EntryTooLarge, MessageStore, MessageTooLarge, ReadResult, StoreConfig,
                       StoreError, StoreFull)
from store.config import TopicConfig, TopicTable
from store.dispatch import Dispatcher, DispatchRequest
from store.store import Store, open

__all__ = ["open", "Store", "MessageStore", "StoreConfig", "Message", "StoredMessage", "AppendResult",
           "ReadResult", "StoreError", "StoreFull", "MessageTooLarge", "EntryTooLarge", "TopicConfig", "TopicTable", "Dispatcher",
           "DispatchRequest", "message"]
