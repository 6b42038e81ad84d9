"""CLUSTER_RECALL (private remoting code 9209): a gRPC RecallMessage for a delayed message another
gateway scheduled.

A delayed message waits in the schedule of the gateway that took its send (a local topic,
gateway.grpc.send), but the SDKs send RecallMessage to their access point (rocketmq-client-java
5.2.0 `ProducerImpl.recallMessage0`: the client's configured endpoints), which under `--shards` is
shard 0 and in a cluster any gateway. RocketMQ's recall handle names the broker holding the timer
and its proxy passes the recall there; the gateway's handle names the gateway that took the send
(`broker-<id>`) and the gateway asked passes the recall to it here. Before, the gateway asked
marked its own schedule, answered OK and the message was delivered anyway. Signed with the
inter-broker credential."""
from __future__ import annotations

import logging

import trio

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from gateway.cluster.routes import broker_name
from gateway.remoting.common import handles
from gateway.remoting.replica_client import RemotingReplicaTransport, outgoing

log = logging.getLogger(__name__)

ANSWER_TIMEOUT_S = 10.0
_transports: dict[int, tuple] = {}  # id(app) -> (its config, its RecallTransport); an App takes no attributes


class RecallTransport(RemotingReplicaTransport):
    """One connection per gateway for passed-on recalls."""

    async def call(self, address: str, cmd: RemotingCommand) -> RemotingCommand:
        return await self._call((address, "recall"), address, cmd, ANSWER_TIMEOUT_S)


def holder(app, broker: str):
    """The live member whose broker name is `broker` (None when none is live)."""
    node = app.ownership
    return next((m for node_id, m in node.live().items() if broker_name(node_id) == broker), None)


async def forward(app, member, topic: str, message_id: str, due_ms: int) -> str | None:
    """Pass the recall to `member`: None once it marked it, else why it could not."""
    config, transport = _transports.get(id(app), (None, None))
    if transport is None or config is not app.config:
        transport = RecallTransport(*outgoing(app.config))
        _transports[id(app)] = (app.config, transport)
    cmd = RemotingCommand(code=RC.CLUSTER_RECALL, ext_fields={"topic": topic, "msgId": message_id,
                                                               "deliverMs": str(due_ms)})
    try:
        resp = await transport.call(member.remoting_addr, cmd)
    except (OSError, trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, EOFError) as exc:
        log.info("cluster: passing a recall to node %d failed: %s", member.node_id, exc)
        return str(exc) or type(exc).__name__
    return None if resp.code == ResponseCode.SUCCESS else (resp.remark or f"code {resp.code}")


@handles(RC.CLUSTER_RECALL)
def recall(channel, req):
    """Another gateway's RecallMessage of a message this gateway's schedule holds."""
    topic, message_id, due = req.get_str("topic"), req.get_str("msgId"), req.get_str("deliverMs")
    if not topic or not message_id or not due or not due.isascii() or not due.isdigit():
        return req.response(ResponseCode.SYSTEM_ERROR, remark="CLUSTER_RECALL needs topic, msgId and deliverMs")
    channel.app.delay.recall(topic, message_id, int(due))
    return req.response(ResponseCode.SUCCESS)
