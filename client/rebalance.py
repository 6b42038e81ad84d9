"""Which queues one member of a consumer group should hold: every readable queue of its topics when
broadcasting, else its share of them among the group's members (AllocateMessageQueueAveragely).
The consumer applies the answer (client.consumer.ConsumerBase.rebalance)."""
from __future__ import annotations

from collections.abc import Iterable

from client.errors import MQBrokerError
from client.instance import ClientInstance
from client.model import MessageModel, MessageQueue
from codec.remoting import RequestCode as RC
from codec.remoting.bodies import loads


def allocate_averagely(mqs: list[MessageQueue], cids: list[str], me: str) -> list[MessageQueue]:
    """AllocateMessageQueueAveragely over the sorted queues and client ids."""
    mqs, cids = sorted(mqs), sorted(cids)
    if me not in cids or not mqs:
        return []
    index, n, k = cids.index(me), len(mqs), len(cids)
    mod = n % k
    if n <= k:
        size = 1
    elif mod > 0 and index < mod:
        size = n // k + 1
    else:
        size = n // k
    start = index * size if mod > 0 and index < mod else index * size + mod
    return [mqs[(start + i) % n] for i in range(min(size, n - start))]


async def queues_to_hold(instance: ClientInstance, group: str, model: MessageModel,
                         topics: Iterable[str]) -> list[MessageQueue]:
    """This member's queues of `topics`, from fresh routes and the group's member list at the broker."""
    wanted = []
    for topic in topics:
        route = await instance.route(topic, refresh=True)
        mqs = route.subscribe_queues()
        if model == MessageModel.BROADCASTING:
            wanted += mqs
            continue
        addr = await instance.broker_addr(mqs[0].broker_name, topic) if mqs else None
        if addr is None:
            continue
        cids = await group_members(instance, addr, group)
        if instance.client_id not in cids:
            # A broker that restarted does not know us until our next heartbeat: send it now
            # rather than give up every queue until then.
            await instance.send_heartbeat()
            cids = await group_members(instance, addr, group)
        wanted += allocate_averagely(mqs, cids, instance.client_id)
    return wanted


async def group_members(instance: ClientInstance, addr: str, group: str) -> list[str]:
    """The client ids of `group` registered at the broker `addr` (none if it refuses)."""
    try:
        resp = await instance.invoke(addr, RC.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})
        return loads(resp.body).get("consumerIdList") or []
    except MQBrokerError:
        return []
