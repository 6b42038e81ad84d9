"""RocketMQ remoting ACL: authenticate each request's AccessKey/Signature and authorize what it does
against the shared ACL model. `RemotingGuard.check(req, address)` returns None (go on) or the answer
to send instead of handling the request.

Answers follow Apache RocketMQ 5.x (ACL 2.0, `AuthenticationPipeline`/`AuthorizationPipeline`):
code NO_PERMISSION (16) and remark
- no AccessKey: "username cannot be null."
- unknown AccessKey: "User:<key> is not found."
- wrong or missing Signature: "check signature failed."
- not allowed: "User:<name> has no permission to access <Topic|Group|Cluster>:<name> from <ip>,
  no matched policies." (", the decision is deny." when a DENY ACL decided).
Name-server requests (route and cluster lookups) are not checked, as a RocketMQ NameServer does
not check them; a request from an address on the global IP whitelist is not checked at all.
CLUSTER_DELIVER (a gateway forwarding due messages) passes only with the cluster's inter-broker
credential's signature (security.inter_broker), whitelist or not; any other principal is refused.
A follower's REPLICA_FETCH / REPLICA_EPOCH_END passes with that signature too.

What each request needs (Kafka operations, after RocketMQ 5's DefaultAuthorizationContextBuilder):
sends WRITE on the topic (a %RETRY% topic: READ on its group); pulls, offset commits, heartbeats,
locks and send-backs READ on the group and the topic; offset and queue lookups DESCRIBE;
admin changes (topic create/delete, subscription groups, offset reset, DLQ resend) ALTER on the
cluster; admin reads (stats, configs, connection lists, message by offset) DESCRIBE on the cluster.
"""
from __future__ import annotations

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting.acl import ACCESS_KEY, signature_matches
from codec.remoting.bodies import loads
from security.acl import CLUSTER_NAME, Authorizer, Operation, ResourceType
from security.audit import DenialLog, FailureLimiter
from security.credentials import CredentialStore
from security.inter_broker import INTER_BROKER_CODES, REPLICATION_CODES, InterBrokerCredential
from security.rocketmq_perms import whitelisted

RETRY_PREFIX, DLQ_PREFIX = "%RETRY%", "%DLQ%"
UPDATE_BROKER_CONFIG = 25

NAMESRV_CODES = frozenset((
    RC.GET_ROUTEINFO_BY_TOPIC, RC.GET_BROKER_CLUSTER_INFO, RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    RC.GET_TOPICS_BY_CLUSTER, RC.GET_TOPIC_NAME_LIST, RC.GET_SYSTEM_TOPIC_LIST_FROM_NS, RC.GET_KV_CONFIG,
    RC.GET_KVLIST_BY_NAMESPACE, RC.DELETE_TOPIC_IN_NAMESRV))
ADMIN_ALTER_CODES = frozenset((
    RC.UPDATE_AND_CREATE_TOPIC, RC.DELETE_TOPIC_IN_BROKER, RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RC.DELETE_SUBSCRIPTIONGROUP, RC.RESEND_DLQ_MESSAGE, RC.INVOKE_BROKER_TO_RESET_OFFSET, UPDATE_BROKER_CONFIG,
    RC.SET_MESSAGE_REQUEST_MODE,
    # replication between gateways: a replica reads every entry of a queue, a role change is the cluster's
    # (CLUSTER_DELIVER is classed here too, but only the inter-broker credential passes: check())
    RC.REPLICA_FETCH, RC.REPLICA_EPOCH_END, RC.REPLICA_ROLE, RC.CLUSTER_DELIVER, RC.CLUSTER_TXN_MARKERS,
    RC.CLUSTER_END_TRANSACTION, RC.CLUSTER_SHARE_OFFSETS, RC.CLUSTER_RECALL,
    RC.TRIGGER_LITE_DISPATCH))  # (5.5: an admin's push of a lite topic's messages to its subscribers)
ADMIN_DESCRIBE_CODES = frozenset((
    RC.GET_ALL_TOPIC_CONFIG, RC.GET_TOPIC_CONFIG_LIST, RC.GET_TOPIC_CONFIG, RC.GET_TOPIC_STATS_INFO,
    RC.GET_CONSUME_STATS, RC.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, RC.GET_ALL_CONSUMER_OFFSET, RC.GET_CONSUMER_CONNECTION_LIST,
    RC.GET_PRODUCER_CONNECTION_LIST, RC.QUERY_TOPIC_CONSUME_BY_WHO, RC.QUERY_TOPICS_BY_CONSUMER,
    RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, RC.GET_BROKER_RUNTIME_INFO, RC.GET_BROKER_CONFIG,
    RC.GET_CONSUMER_RUNNING_INFO, RC.VIEW_MESSAGE_BY_ID, RC.GET_ALL_DELAY_OFFSET, RC.QUERY_BROKER_OFFSET,
    RC.REPLICA_STATE,
    # RocketMQ 5.5's lite topic admin queries (mqadmin getLiteTopicInfo and the like)
    RC.GET_BROKER_LITE_INFO, RC.GET_PARENT_TOPIC_INFO, RC.GET_LITE_TOPIC_INFO, RC.GET_LITE_CLIENT_INFO,
    RC.GET_LITE_GROUP_INFO))
# POP (5.x): the consumer group and topic are header fields, as on a pull.
_POP_HEADER_CODES = frozenset((RC.POP_MESSAGE, RC.ACK_MESSAGE, RC.PEEK_MESSAGE, RC.CHANGE_MESSAGE_INVISIBLETIME,
                               RC.NOTIFICATION, RC.POLLING_INFO, RC.POP_LITE_MESSAGE))
_LOOKUP_CODES = frozenset((RC.GET_MAX_OFFSET, RC.GET_MIN_OFFSET, RC.SEARCH_OFFSET_BY_TIMESTAMP,
                           RC.GET_EARLIEST_MSG_STORETIME))
_TYPE_NAMES = {ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group", ResourceType.CLUSTER: "Cluster"}


class _Unparsable(Exception):
    """The request's body cannot be read to know what it touches: refused."""


Need = tuple  # (Operation, ResourceType, name)


def _topic_or_group(topic: str | None, op: Operation, group_op: Operation | None = None) -> list[Need]:
    """A topic need; a %RETRY%<g> topic is group <g>'s (a %DLQ% topic stays a topic of that name)."""
    if topic is None:
        return []
    if topic.startswith(RETRY_PREFIX):
        return [(group_op or op, ResourceType.GROUP, topic[len(RETRY_PREFIX):])]
    return [(op, ResourceType.TOPIC, topic)]


def _group(name: str | None, op: Operation) -> list[Need]:
    if not name:
        return []
    if name.startswith(RETRY_PREFIX):
        name = name[len(RETRY_PREFIX):]
    return [(op, ResourceType.GROUP, name)]


def _json(req: RemotingCommand) -> dict:
    try:
        body = loads(bytes(req.body))
    except Exception:
        raise _Unparsable() from None
    if not isinstance(body, dict):
        raise _Unparsable()
    return body


def _objects(value) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise _Unparsable()
    return value


def _str(value) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _Unparsable()
    return value


def needs(req: RemotingCommand) -> list[Need]:
    """What the request does, as (operation, resource type, name) triples; [] = authentication only."""
    f, code = req.ext_fields, req.code
    if code in (RC.SEND_MESSAGE, RC.SEND_MESSAGE_V2, RC.SEND_BATCH_MESSAGE):
        v2 = code != RC.SEND_MESSAGE
        topic, group = f.get("b" if v2 else "topic"), f.get("a" if v2 else "producerGroup")
        if topic is not None and topic.startswith(RETRY_PREFIX):
            return _group(group or topic, Operation.READ)
        return _topic_or_group(topic, Operation.WRITE)
    if code == RC.END_TRANSACTION:
        return _topic_or_group(f.get("topic"), Operation.WRITE)
    if code == RC.CONSUMER_SEND_MSG_BACK:
        return _group(f.get("group"), Operation.READ)
    if code in (RC.PULL_MESSAGE, RC.LITE_PULL_MESSAGE, RC.UPDATE_CONSUMER_OFFSET) or code in _POP_HEADER_CODES:
        return _group(f.get("consumerGroup"), Operation.READ) + _topic_or_group(f.get("topic"), Operation.READ)
    if code == RC.BATCH_ACK_MESSAGE:
        out: list[Need] = []
        for ack in _objects(_json(req).get("acks")):
            out += _group(_str(ack.get("c")), Operation.READ) + _topic_or_group(_str(ack.get("t")), Operation.READ)
        return out
    if code == RC.LITE_SUBSCRIPTION_CTL:  # each entry subscribes a group's client to lite topics of a parent
        out = []
        for entry in _objects(_json(req).get("subscriptionSet")):
            out += _group(_str(entry.get("group")), Operation.READ) + _topic_or_group(_str(entry.get("topic")), Operation.READ)
        return out
    if code == RC.QUERY_ASSIGNMENT:
        body = _json(req)
        return (_group(_str(body.get("consumerGroup")), Operation.READ)
                + _topic_or_group(_str(body.get("topic")), Operation.READ))
    if code == RC.QUERY_CONSUMER_OFFSET:
        return _group(f.get("consumerGroup"), Operation.DESCRIBE) + _topic_or_group(f.get("topic"), Operation.DESCRIBE)
    if code == RC.QUERY_MESSAGE:
        return _topic_or_group(f.get("topic"), Operation.READ)
    if code in _LOOKUP_CODES:
        return _topic_or_group(f.get("topic"), Operation.DESCRIBE)
    if code == RC.HEART_BEAT:
        out: list[Need] = []
        for consumer in _objects(_json(req).get("consumerDataSet")):
            out += _group(_str(consumer.get("groupName")), Operation.READ)
            for sub in _objects(consumer.get("subscriptionDataSet")):
                topic = _str(sub.get("topic"))
                if topic and not topic.startswith(RETRY_PREFIX):
                    out.append((Operation.READ, ResourceType.TOPIC, topic))
        return out
    if code in (RC.LOCK_BATCH_MQ, RC.UNLOCK_BATCH_MQ):
        body = _json(req)
        out = _group(_str(body.get("consumerGroup")), Operation.READ)
        for mq in _objects(body.get("mqSet")):
            topic = _str(mq.get("topic"))
            if topic and not topic.startswith(RETRY_PREFIX):
                out.append((Operation.READ, ResourceType.TOPIC, topic))
        return out
    if code == RC.UNREGISTER_CLIENT:
        return _group(f.get("consumerGroup"), Operation.READ)
    if code == RC.GET_CONSUMER_LIST_BY_GROUP:
        return _group(f.get("consumerGroup"), Operation.DESCRIBE)
    if code == RC.CHECK_CLIENT_CONFIG:
        return _group(f.get("group"), Operation.READ)
    if code in ADMIN_ALTER_CODES:
        return [(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)]
    if code in ADMIN_DESCRIBE_CODES:
        return [(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)]
    return []


class RemotingGuard:
    def __init__(self, credentials: CredentialStore, authorizer: Authorizer, denials: DenialLog | None = None,
                 limiter: FailureLimiter | None = None, inter_broker: InterBrokerCredential | None = None) -> None:
        self.credentials = credentials
        self.inter_broker = inter_broker  # the only signer of INTER_BROKER_CODES (security.inter_broker)
        self.authorizer = authorizer
        self.denials = denials or DenialLog()
        self.limiter = limiter or FailureLimiter()

    def check(self, req: RemotingCommand, address: str) -> RemotingCommand | None:
        if req.code in INTER_BROKER_CODES:
            return self._check_inter_broker(req, address)
        ib = self.inter_broker
        if req.code in REPLICATION_CODES and ib is not None and ib.signed(req) and not self.limiter.blocked(address):
            return None  # a follower gateway (otherwise: a cluster admin, as below)
        if req.code in NAMESRV_CODES or whitelisted(self.authorizer, address):
            return None
        principal, refusal = self._authenticate(req, address)
        if refusal is not None:
            return refusal
        try:
            wanted = needs(req)
        except _Unparsable:
            return self._refuse(req, principal, address, "parse", "request body", "parse authorization context error.")
        for op, rtype, name in wanted:
            decision = self.authorizer.decide(principal, address, op, rtype, name)
            if not decision.allowed:
                resource = f"{_TYPE_NAMES.get(rtype, rtype.name.title())}:{name}"
                detail = "the decision is deny." if decision.reason == "denied by ACL" else "no matched policies."
                remark = f"{principal} has no permission to access {resource} from {address}, {detail}"
                return self._refuse(req, principal, address, op.name, resource, remark)
        return None

    def _check_inter_broker(self, req: RemotingCommand, address: str) -> RemotingCommand | None:
        """A gateway's forward: only the inter-broker credential's signature passes (no whitelist,
        no super user); anyone else is authenticated as usual, then refused."""
        ib = self.inter_broker
        if ib is not None and ib.names(req) and not self.limiter.blocked(address):
            return None if ib.signed(req) else self._failed(req, address, ib.principal, "check signature failed.")
        principal, refusal = self._authenticate(req, address)
        if refusal is not None:
            return refusal
        resource = f"Cluster:{CLUSTER_NAME}"
        remark = (f"{principal} has no permission to access {resource} from {address}, "
                  f"only the inter-broker principal may send CLUSTER_DELIVER.")
        return self._refuse(req, principal, address, "CLUSTER_DELIVER", resource, remark)

    def _authenticate(self, req: RemotingCommand, address: str) -> tuple[str, RemotingCommand | None]:
        if self.limiter.blocked(address):
            self.denials.denied("-", "authenticate", "remoting", address, "too many authentication failures")
            return "", req.response(ResponseCode.NO_PERMISSION,
                                    remark="too many authentication failures, try again later.")
        access_key = req.ext_fields.get(ACCESS_KEY)
        if not access_key:
            return "", self._failed(req, address, "-", "username cannot be null.")
        key = self.credentials.access_key(access_key)
        if key is None:
            return "", self._failed(req, address, f"User:{access_key}", f"User:{access_key} is not found.")
        if not signature_matches(req, key.secret):
            return "", self._failed(req, address, f"User:{key.user}", "check signature failed.")
        return f"User:{key.user}", None

    def _failed(self, req: RemotingCommand, address: str, principal: str, remark: str) -> RemotingCommand:
        self.limiter.failed(address)
        return self._refuse(req, principal, address, "authenticate", "remoting", remark)

    def _refuse(self, req, principal, address, operation, resource, remark) -> RemotingCommand:
        self.denials.denied(principal, operation, resource, address, remark)
        return req.response(ResponseCode.NO_PERMISSION, remark=remark)
