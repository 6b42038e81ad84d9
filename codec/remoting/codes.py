"""RocketMQ remoting request and response codes (RequestCode / ResponseCode numbers)."""
from __future__ import annotations


class RequestCode:
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    GET_BROKER_CONFIG = 26
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    GET_KV_CONFIG = 101
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220  # broker -> consumer (oneway): ResetOffsetBody
    GET_CONSUMER_STATUS_FROM_CLIENT = 221  # broker -> consumer: its offset table for a topic
    INVOKE_BROKER_TO_RESET_OFFSET = 222  # mqadmin resetOffsetByTime
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223  # mqadmin getConsumerStatus
    GET_TOPICS_BY_CLUSTER = 224
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_CONSUMER_RUNNING_INFO = 307
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320
    QUERY_TOPICS_BY_CONSUMER = 343
    GET_TOPIC_CONFIG = 351
    LITE_PULL_MESSAGE = 361  # 5.x lite pull consumer: PULL_MESSAGE's header and answers
    # Private to rocketgate (replication between gateways; gateway.remoting.replica_fetch): no
    # RocketMQ client sends them.
    REPLICA_FETCH = 9201
    REPLICA_EPOCH_END = 9202
    REPLICA_ROLE = 9203
    REPLICA_STATE = 9204
    CLUSTER_DELIVER = 9205  # a due delayed / committed message for a queue another gateway leads
    CLUSTER_TXN_MARKERS = 9206  # a Kafka transaction's end for the partitions a gateway leads (gateway.cluster.txns)
    CLUSTER_END_TRANSACTION = 9207  # an END_TRANSACTION another gateway got for a half held here (gateway.cluster.end_forward)
    CLUSTER_SHARE_OFFSETS = 9208  # share-group offset admin for partitions another gateway leads (gateway.cluster.share_offsets)
    CLUSTER_RECALL = 9209  # a gRPC RecallMessage of a delayed message another gateway scheduled (gateway.cluster.recall_forward)
    QUERY_ASSIGNMENT = 400  # 5.x POP: broker-side rebalance and the request mode (gateway/remoting/pop*)
    SET_MESSAGE_REQUEST_MODE = 401
    POP_MESSAGE = 200050
    ACK_MESSAGE = 200051
    PEEK_MESSAGE = 200052
    CHANGE_MESSAGE_INVISIBLETIME = 200053
    NOTIFICATION = 200054
    POLLING_INFO = 200055
    BATCH_ACK_MESSAGE = 200151
    # RocketMQ 5.5 lite topics (RIP-83; gateway/remoting/pop_lite.py, lite_admin.py)
    POP_LITE_MESSAGE = 200070
    LITE_SUBSCRIPTION_CTL = 200071
    ACK_LITE_MESSAGE = 200072  # defined by 5.5 but not served by its broker (acks are ACK_MESSAGE + liteTopic)
    NOTIFY_UNSUBSCRIBE_LITE = 200073  # broker -> client
    GET_BROKER_LITE_INFO = 200074
    GET_PARENT_TOPIC_INFO = 200075
    GET_LITE_TOPIC_INFO = 200076
    GET_LITE_CLIENT_INFO = 200077
    GET_LITE_GROUP_INFO = 200078
    TRIGGER_LITE_DISPATCH = 200079
    # rocketgate's own admin call (no RocketMQ code does this): put a dead letter back on its original
    # topic. Header: commitLogOffset (of the %DLQ% entry), optional queueId. Answer: msgId, queueId,
    # queueOffset; SYSTEM_ERROR when the offset is not a dead letter.
    RESEND_DLQ_MESSAGE = 10001


class ResponseCode:
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    INVALID_PARAMETER = 29
    CONSUMER_NOT_ONLINE = 206
    NO_MESSAGE = 208
    POLLING_FULL = 209
    POLLING_TIMEOUT = 210


class PullSysFlag:
    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL = 0x10


class PermName:
    INHERIT = 1
    WRITE = 2
    READ = 4
    PRIORITY = 8


LANGUAGES = ["JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO",
             "PHP", "OMS", "RUST", "NODE_JS"]

# MQVersion ordinals: 4.9.8 answers keep the Java client's broker-version checks (>= 232) happy.
SERVER_VERSION = 409
