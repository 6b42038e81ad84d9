"""CLUSTER_SHARE_OFFSETS (private remoting code 9208): the share-group offset admin (Kafka
DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets) for partitions another
gateway leads. A share partition's state is its leader's pop engine (`gateway.share_state`),
but the admin client sends these requests to the group's coordinator, which may lead none of them
(one shard of `--shards N` coordinates the group, the other leads the partition: before, the
coordinator reset its own empty copy, clamped to 0, and described that). The coordinator asks each
leader for its partitions in one call; body JSON {op: describe|alter|delete|queues, group, parts:
[[topic, partition, start], ...], topics}; the answer {parts: [[topic, partition, a, b], ...]}
(describe: start, lag) once the change is durable. Signed with the inter-broker credential."""
from __future__ import annotations

import json
import logging

import trio

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from gateway.share_state import drop, reset, start_and_lag
from gateway.remoting.common import DEFERRED, handles
from gateway.remoting.replica_client import RemotingReplicaTransport, outgoing

log = logging.getLogger(__name__)

ANSWER_TIMEOUT_S = 10.0


class ShareOffsetsTransport(RemotingReplicaTransport):
    async def call(self, address: str, cmd: RemotingCommand) -> RemotingCommand:
        return await self._call((address, "share-offsets"), address, cmd, ANSWER_TIMEOUT_S)


class ShareOffsets:
    """The coordinator's side: installed as `app.kafka.share_offsets` by the cluster service (None
    with one process, where every partition is this gateway's)."""

    def __init__(self, app) -> None:
        self.app = app
        self.transport = ShareOffsetsTransport(*outgoing(app.config))

    def leader_of(self, topic: str, p: int) -> int | None:
        """The node id leading the partition when it is another gateway's (None: this one)."""
        node = self.app.ownership
        a = node.assignment(topic, p)
        return a.leader if a is not None and a.leader != node.node_id else None

    def others(self) -> list[int]:
        """The other live gateways."""
        node = self.app.ownership
        return [n for n in sorted(node.live()) if n != node.node_id]

    async def ask(self, node_id: int, body: dict) -> list | None:
        """The leader's answer rows, or None when it could not be asked (down, or refused)."""
        member = self.app.ownership.live().get(node_id)
        if member is None:
            return None
        cmd = RemotingCommand(code=RC.CLUSTER_SHARE_OFFSETS, body=json.dumps(body).encode())
        try:
            resp = await self.transport.call(member.remoting_addr, cmd)
        except (OSError, trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, EOFError) as exc:
            log.info("cluster: share offsets at node %d failed: %s", node_id, exc)
            return None
        if resp.code != ResponseCode.SUCCESS:
            log.info("cluster: share offsets at node %d refused: %s", node_id, resp.remark)
            return None
        return json.loads(resp.body or b"{}").get("parts", [])


@handles(RC.CLUSTER_SHARE_OFFSETS)
def share_offsets(channel, req):
    """A coordinator's share-offset admin for partitions this gateway leads."""
    app = channel.app
    try:
        body = json.loads(req.body or b"")
        op, group = str(body["op"]), str(body["group"])
        parts = [(str(t), int(p), int(s)) for t, p, s in body.get("parts", [])]
        names = None if body.get("topics") is None else {str(t) for t in body["topics"]}
    except (ValueError, KeyError, TypeError) as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"bad CLUSTER_SHARE_OFFSETS body: {exc}")
    rows, end = [], 0
    if op == "describe":
        rows = [[t, p, *start_and_lag(app, group, t, p)] for t, p, _ in parts]
    elif op == "alter":
        for t, p, start in parts:
            end = max(end, reset(app, group, t, p, start))
            rows.append([t, p, 0, 0])
    elif op == "delete":
        end = drop(app, group, names)
        app.offsets.persist()
    elif op == "queues":
        rows = [[t, p, 0, 0] for t, p in app.pop.queues(group)]
    else:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"unknown CLUSTER_SHARE_OFFSETS op {op!r}")

    async def answered():
        await app.durable(end)
        return req.response(ResponseCode.SUCCESS, body=json.dumps({"parts": rows}).encode())
    channel.spawn(req, answered, after_effects=True)
    return DEFERRED
