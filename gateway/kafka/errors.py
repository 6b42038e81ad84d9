"""Kafka error codes the gateway returns (numbers from Kafka's Errors enum)."""
import store

NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6  # a partition another member leads, or a replica here
FENCED_LEADER_EPOCH = 74  # a request's current leader epoch is older than the leader's
UNKNOWN_LEADER_EPOCH = 75  # ... newer than the leader's
REQUEST_TIMED_OUT = 7
INVALID_FETCH_SIZE = 4
MESSAGE_TOO_LARGE = 10
RECORD_LIST_TOO_LARGE = 18
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUIRED_ACKS = 21
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
UNSUPPORTED_VERSION = 35
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_PRODUCER_EPOCH = 47
INVALID_REQUEST = 42
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
INVALID_RECORD = 87
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
TRANSACTION_ABORTABLE = 120
INCONSISTENT_GROUP_PROTOCOL = 23
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNKNOWN_TOPIC_ID = 100
GROUP_ID_NOT_FOUND = 69
KAFKA_STORAGE_ERROR = 56
LOG_DIR_NOT_FOUND = 57
INVALID_UPDATE_VERSION = 95
UNKNOWN_SERVER_ERROR = -1


def for_store_error(exc) -> int:
    """The Kafka code for a store refusal: a full disk or a failed write is KAFKA_STORAGE_ERROR
    (retriable: the producer retries and the write goes through once space is back), a too-large
    entry MESSAGE_TOO_LARGE, a batch larger than a CommitLog file RECORD_LIST_TOO_LARGE (as Kafka
    answers a batch larger than segment.bytes; neither is retriable), a message the store cannot
    encode INVALID_RECORD."""
    if isinstance(exc, store.EntryTooLarge):
        return RECORD_LIST_TOO_LARGE
    if isinstance(exc, store.MessageTooLarge):
        return MESSAGE_TOO_LARGE
    if isinstance(exc, store.StoreFull) or isinstance(exc.__cause__, OSError):
        return KAFKA_STORAGE_ERROR
    if str(exc).startswith("cannot store message"):
        return INVALID_RECORD
    return KAFKA_STORAGE_ERROR
