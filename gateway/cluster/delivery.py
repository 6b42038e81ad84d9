"""Due messages for queues another gateway leads (docs/cluster.md, "System topics").

A delayed message waits in the schedule topic of the gateway that took the send, and a committed
half in its half topic; by the time it is due the target queue may be led elsewhere (a failover or
a reassignment). Appending it to this gateway's copy of the queue would hide it (clients read the
leader) or make the copy diverge (a follower's log is the leader's). So:
- `LeaderRouter` is the delay scheduler's router (semantics.delay): HERE for queues this gateway
  leads and local topics, LATER while there is no live leader (or this gateway is fenced), else
  the leader's remoting address, to which `deliver` sends the messages as one CLUSTER_DELIVER.
- CLUSTER_DELIVER (private, cluster queue ids): the body is the messages in the stored layout
  (codec.remoting.message); the leader appends them in one write if it leads every target queue,
  and answers once they are durable (sync flush) and held by the in-sync replicas, else refuses
  the whole request with NO_PERMISSION (the sender tries again after re-reading its view).
  A request the sender marks `resent` (ext field "resent": an earlier send of some of its messages
  may have been taken, its answer lost) is de-duplicated: a message whose delivery (its sender's
  node id, schedule entry and born time: semantics.delay_forward.delivery_key) is already in the
  tail of its queue is not stored again; the answer waits for that copy as for a new one.
- Security (docs/security.md, "Between gateways"): with `--inter-broker-credentials` every
  CLUSTER_DELIVER is signed with the cluster's inter-broker credential, the only one a leader
  under `--authorizer acl` accepts for it (security.inter_broker); with `--remoting-tls` the
  leader's remoting port is reached over TLS (gateway.remoting.replica_client.outgoing).
"""
from __future__ import annotations

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting import message as M
from gateway.remoting.common import DEFERRED, handles
from gateway.remoting.replica_client import RemotingReplicaTransport, outgoing
from semantics.delay_forward import HERE, LATER, delivery_key, held_copies
from semantics.replication.contract import NotLeader
from semantics.routing import to_message

ANSWER_TIMEOUT_S = 10.0


class DeliveryRefused(Exception):
    """The leader did not take the messages (the remark says why)."""


class _Transport(RemotingReplicaTransport):
    """The replicas' connection cache, one connection per leader for deliveries."""

    async def call(self, address: str, cmd: RemotingCommand) -> RemotingCommand:
        return await self._call((address, "deliver"), address, cmd, ANSWER_TIMEOUT_S)


class LeaderRouter:
    """Where this member delivers a due message (the delay scheduler's `router`)."""

    def __init__(self, node, config=None) -> None:
        self.node = node
        self.transport = _Transport(*outgoing(config))

    def target(self, topic: str, queue_id: int) -> str:
        node = self.node
        a = node.assignment(topic, queue_id)
        if a is None:  # a local topic (retry, DLQ), or a queue the cluster does not know: as before
            return HERE
        if a.leader == node.node_id:
            return LATER if node.fenced() else HERE
        member = node.view.members.get(a.leader)
        return LATER if member is None else member.remoting_addr

    async def deliver(self, address: str, msgs: list, resent: bool = False) -> list[int]:
        """The queue offsets the leader stored `msgs` at (-1 each from a leader that does not say)."""
        fields = {"count": str(len(msgs)), **({"resent": "1"} if resent else {})}
        cmd = RemotingCommand(code=RC.CLUSTER_DELIVER, ext_fields=fields, body=b"".join(M.encode(m) for m in msgs))
        resp = await self.transport.call(address, cmd)
        if resp.code != ResponseCode.SUCCESS:
            raise DeliveryRefused(resp.remark or f"code {resp.code}")
        offsets = (resp.ext_fields or {}).get("queueOffsets", "")
        return [int(o) for o in offsets.split(",")] if offsets else [-1] * len(msgs)


def leads(node, topic: str, queue_id: int) -> bool:
    """Whether a commit may append to this queue here (semantics.transactions' `leads`)."""
    return node.owns(topic, queue_id)


@handles(RC.CLUSTER_DELIVER)
def cluster_deliver(channel, req):
    app = channel.app
    body, pos, msgs = req.body or b"", 0, []
    try:
        while pos < len(body):
            stored = M.decode(body, pos)
            pos += stored.size
            msgs.append(to_message(stored))
    except M.MessageFormatError as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"bad CLUSTER_DELIVER body: {exc}")
    for m in msgs:
        if app.store.topics.get(m.topic) is None or not app.ownership.owns(m.topic, m.queue_id):
            return req.response(ResponseCode.NO_PERMISSION,
                                remark=f"not the leader of {m.topic} queue {m.queue_id} (or fenced)")
    held = held_copies(app.store, msgs) if (req.ext_fields or {}).get("resent") == "1" else {}
    fresh = [m for m in msgs if delivery_key(m) not in held]
    results = app.store.append_many(fresh) if fresh else []
    taken = iter(results)  # each message's queue offset, in the request's order (a forwarded gRPC send answers them)
    offsets = ",".join(str(held[delivery_key(m)][0] if delivery_key(m) in held else next(taken).queue_offset)
                       for m in msgs)
    ends: dict[tuple[str, int], int] = {}
    durable_end = 0
    copies = [(m.topic, m.queue_id, r.queue_offset + r.count, r.end_offset) for m, r in zip(fresh, results)]
    copies += [(m.topic, m.queue_id, qoff + m.batch_count, m.physical_offset + m.size) for qoff, m in held.values()]
    for topic, qid, end, phys_end in copies:
        ends[(topic, qid)] = max(end, ends.get((topic, qid), 0))
        durable_end = max(durable_end, phys_end)
    if not copies:
        return req.response(ResponseCode.SUCCESS, {"queueOffsets": offsets})

    async def settled():
        await app.durable(durable_end)
        try:
            for (topic, qid), end in ends.items():
                await app.replicated(topic, qid, end)
        except NotLeader as exc:  # stored here, but not known to be replicated: the sender retries
            return req.response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        return req.response(ResponseCode.SUCCESS, {"queueOffsets": offsets})
    channel.spawn(req, settled, after_effects=True)
    return DEFERRED
