"""KIP-848 consumer-group APIs: ConsumerGroupHeartbeat and ConsumerGroupDescribe, over
`semantics.kafka_consumer_groups.ConsumerGroups` (one per app, in `app.kafka`). Assignments travel
as topic ids (`topics.topic_id`); the coordinator works with names."""
from __future__ import annotations

import gateway.kafka.errors as errors
import gateway.kafka.topics as topics
from codec.kafka import apis
from gateway.kafka.registry import RequestContext, handler
from gateway.kafka.state import kafka_state
from semantics.kafka_consumer_groups import ConsumerGroups

def consumer_groups(app) -> ConsumerGroups:
    return kafka_state(app).consumer_groups


def _by_ids(app, assignment: dict) -> dict:
    return {"topic_partitions": [{"topic_id": topics.topic_id(app, t), "partitions": ps}
                                 for t, ps in sorted(assignment.items())]}


@handler(apis.CONSUMER_GROUP_HEARTBEAT)
async def consumer_group_heartbeat(ctx: RequestContext):
    req = dict(ctx.request)
    classic = kafka_state(ctx.app).coordinator.groups.get(req["group_id"])
    streams = kafka_state(ctx.app).streams_groups.groups.get(req["group_id"])
    if (classic is not None and classic.members) or (streams is not None and streams.members):  # one protocol
        return {"error_code": errors.GROUP_ID_NOT_FOUND, "error_message": f"Group {req['group_id']} is not a "
                "consumer group: it has classic or streams members.", "member_epoch": 0, "assignment": None}
    owned = req.get("topic_partitions")
    if owned is not None:
        names = {}
        for tp in owned:
            name = topics.name_of_topic_id(ctx.app, tp["topic_id"])
            if name is not None:
                names.setdefault(name, []).extend(tp["partitions"])
        req["owned_by_name"] = names
    resp = consumer_groups(ctx.app).heartbeat(req, ctx.version, ctx.client_id, "/" + ctx.peer_host)
    if resp.get("assignment") is not None:
        resp["assignment"] = _by_ids(ctx.app, resp["assignment"])
    return resp


def _described(app, assignment: dict) -> dict:
    return {"topic_partitions": [{"topic_id": topics.topic_id(app, t), "topic_name": t, "partitions": sorted(ps)}
                                 for t, ps in sorted(assignment.items()) if ps]}


def describe_groups(coordinator, group_ids: list, unknown: dict, describe) -> dict:
    """A *GroupDescribe answer: `describe(group) -> dict` for each known group (its members expired
    first), GROUP_ID_NOT_FOUND with the `unknown` fields for the others."""
    out = []
    for group_id in group_ids:
        g = coordinator.groups.get(group_id)
        if g is None:
            out.append({"error_code": errors.GROUP_ID_NOT_FOUND, "error_message": f"Group {group_id} not found.",
                        "group_id": group_id, **unknown})
            continue
        coordinator.expire(g)
        out.append({"error_code": errors.NONE, "group_id": group_id, "group_state": g.state(),
                    "group_epoch": g.epoch, "assignment_epoch": g.assignment_epoch, **describe(g)})
    return {"groups": out}


def _describe(app, g) -> dict:
    return {"assignor_name": g.assignor,
            "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                         "member_epoch": m.epoch, "client_id": m.client_id, "client_host": m.client_host,
                         "subscribed_topic_names": [] if m.regex else m.topics,
                         "subscribed_topic_regex": m.regex, "assignment": _described(app, m.assigned),
                         "target_assignment": _described(app, g.target.get(m.member_id, {})),
                         "member_type": 1}  # 1: a member that uses the consumer protocol
                        for m in g.members.values()]}


@handler(apis.CONSUMER_GROUP_DESCRIBE)
async def consumer_group_describe(ctx: RequestContext):
    return describe_groups(consumer_groups(ctx.app), ctx.request["group_ids"],
                           {"group_state": "Dead", "members": []}, lambda g: _describe(ctx.app, g))
