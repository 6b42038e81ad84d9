"""CLUSTER_END_TRANSACTION (private remoting code 9207): a RocketMQ END_TRANSACTION whose half this
gateway does not hold, passed on to the other live gateways.

Every cluster topic's route maps its queues as a static topic (gateway.cluster.routes.queue_mapping).
A RocketMQ 5 Java producer then ends a transaction at a null address, which is its name server's
connection (rocketmq-client 5.3.3 DefaultMQProducerImpl.endTransaction: the SendResult's queue
names the real broker, which the static topic's endpoint table does not hold, so
getBrokerNameFromMessageQueue answers null; NettyRemotingClient sends to the name server for a null
address). Every gateway is a name server, so the end reaches any gateway, often not the one that
took the half. That gateway decides it only if its half at the offsets is the same message (its
UNIQ_KEY is the header's msgId); else it passes it on here, and each other gateway decides it on the
same condition and passes it on no further. Signed with the inter-broker credential."""
from __future__ import annotations

import logging

import trio

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from gateway.cluster.ownership import clustered
from gateway.remoting.replica_client import RemotingReplicaTransport, outgoing

log = logging.getLogger(__name__)

ANSWER_TIMEOUT_S = 10.0
_JAVA_V5 = 413  # MQVersion.Version.V5_0_0.ordinal()
_transports: dict[int, tuple] = {}  # id(app) -> (its config, its EndTransport); an App takes no attributes


class EndTransport(RemotingReplicaTransport):
    """One connection per gateway for forwarded ends."""

    async def call(self, address: str, cmd: RemotingCommand) -> RemotingCommand:
        return await self._call((address, "end-transaction"), address, cmd, ANSWER_TIMEOUT_S)


def may_be_misrouted(app, req) -> bool:
    """Whether an END_TRANSACTION may have reached another gateway than the half's: a cluster, and a
    RocketMQ 5 Java client that named no broker (the static-topic case above)."""
    return (req.code == RC.END_TRANSACTION and clustered(app) and "bname" not in req.ext_fields
            and req.language == "JAVA" and req.version >= _JAVA_V5)


async def forward(app, req) -> bool:
    """Whether another live gateway decided the end (tried in node id order until one did)."""
    config, transport = _transports.get(id(app), (None, None))
    if transport is None or config is not app.config:
        transport = EndTransport(*outgoing(app.config))
        _transports[id(app)] = (app.config, transport)
    node = app.ownership
    for node_id, member in sorted(node.live().items()):
        if node_id == node.node_id:
            continue
        cmd = RemotingCommand(code=RC.CLUSTER_END_TRANSACTION, ext_fields=dict(req.ext_fields))
        try:
            resp = await transport.call(member.remoting_addr, cmd)
        except (OSError, trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, EOFError) as exc:
            log.info("cluster: forwarding an END_TRANSACTION to node %d failed: %s", node_id, exc)
            continue
        if resp.code == ResponseCode.SUCCESS:
            return True
    return False
