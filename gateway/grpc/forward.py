"""The messages of a gRPC send whose queue another gateway leads: a message group's queue is fixed
by its group (gateway.grpc.send), wherever the client sent it. Each leader gets its messages as one
CLUSTER_DELIVER (gateway.cluster.delivery, the way due delayed messages reach a leader): it appends
them if it still leads their queues and answers, once they are durable and held by the in-sync
replicas, with their queue offsets. A queue without a live leader (or this gateway fenced) is
refused FORBIDDEN, as is a leader's refusal: the SDK sends again after its retry back-off."""
from __future__ import annotations

from gateway.cluster.ownership import clustered
from gateway.grpc.common import Code, RpcError
from semantics.delay_forward import HERE, LATER
from store.api import AppendResult


async def forward_elsewhere(app, msgs: list) -> dict[int, AppendResult]:
    """{index in `msgs`: where it went} of the messages another gateway took; the rest stay here."""
    if not clustered(app):
        return {}
    node, router = app.ownership, getattr(app.ownership, "router", None)
    by_leader: dict[str, list[int]] = {}
    for i, m in enumerate(msgs):
        if not node.assigned(m.topic) or node.owns(m.topic, m.queue_id):
            continue
        target = router.target(m.topic, m.queue_id) if router is not None else LATER
        if target in (HERE, LATER):
            raise RpcError(Code.FORBIDDEN, f"queue {m.queue_id} of {m.topic} has no live leader now (or "
                                           f"{node.broker_name} is fenced); send again")
        by_leader.setdefault(target, []).append(i)
    out = {}
    for address, indexes in by_leader.items():
        try:
            offsets = await router.deliver(address, [msgs[i] for i in indexes])
        except Exception as exc:  # refused (no longer its leader), unreachable, timed out
            raise RpcError(Code.FORBIDDEN, f"the leader at {address} did not take the messages ({exc}); "
                                           f"send again") from None
        for i, offset in zip(indexes, offsets):
            out[i] = AppendResult(0, offset, 1, 0, 0, 0)
    return out
