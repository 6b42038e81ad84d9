"""KIP-1071 streams-group APIs: StreamsGroupHeartbeat and StreamsGroupDescribe, over
`semantics.kafka_streams_groups.StreamsGroups` (one per app, in `app.kafka`). The coordinator may
create the application's internal topics during a heartbeat; a cluster publishes them before the
answer, as CreateTopics does."""
from __future__ import annotations

import gateway.kafka.access_streams as access_streams
import gateway.kafka.errors as errors
from codec.kafka import apis
from gateway.kafka.consumer_groups import describe_groups
from gateway.kafka.registry import RequestContext, handler
from gateway.kafka.state import kafka_state
from semantics.kafka_streams_groups import StreamsGroups, task_list


def streams_groups(app) -> StreamsGroups:
    return kafka_state(app).streams_groups


@handler(apis.STREAMS_GROUP_HEARTBEAT)
async def streams_group_heartbeat(ctx: RequestContext):
    state = kafka_state(ctx.app)
    group_id = ctx.request["group_id"]
    classic = state.coordinator.groups.get(group_id)
    consumer = state.consumer_groups.groups.get(group_id)
    if (classic is not None and classic.members) or (consumer is not None and consumer.members) \
            or group_id in state.share_groups.groups:  # one protocol per group id
        return {"error_code": errors.GROUP_ID_NOT_FOUND, "error_message": f"Group {group_id} is not a streams "
                "group.", "member_id": ctx.request["member_id"], "member_epoch": 0}
    if getattr(ctx.app, "security", None) is not None:
        state.streams_groups.create_denied = access_streams.create_denied(ctx)
    try:
        resp = state.streams_groups.heartbeat(ctx.request, ctx.client_id, "/" + ctx.peer_host)
    finally:
        state.streams_groups.create_denied = lambda names: []
    if state.streams_created:
        created, state.streams_created = state.streams_created, []
        await ctx.app.ownership.published(created)
    return resp


def _topic_info(info: dict, partitions: int) -> dict:
    """A TopicInfo as the member sent it, with the partition count the group configured."""
    return {**info, "partitions": partitions}


def _described_topology(g) -> dict | None:
    """The group's topology with the partition counts it was configured with (subtopologies null
    while it cannot be configured, as Kafka answers)."""
    if g.topology is None:
        return None
    subs = None
    if g.tasks:
        subs = [{"subtopology_id": s["subtopology_id"], "source_topics": s["source_topics"],
                 "repartition_sink_topics": s["repartition_sink_topics"],
                 "state_changelog_topics": [_topic_info(t, g.internal.get(t["name"], 0))
                                            for t in s["state_changelog_topics"]],
                 "repartition_source_topics": [_topic_info(t, g.internal.get(t["name"], 0))
                                               for t in s["repartition_source_topics"]]}
                for s in g.topology["subtopologies"]]
    return {"epoch": g.topology_epoch, "subtopologies": subs}


def _assignment(active: dict, standby: dict) -> dict:
    return {"active_tasks": task_list(active), "standby_tasks": task_list(standby), "warmup_tasks": []}


def _describe(g) -> dict:
    return {"topology": _described_topology(g),
            "members": [{"member_id": m.member_id, "member_epoch": m.epoch, "instance_id": m.instance_id,
                         "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
                         "topology_epoch": m.topology_epoch, "process_id": m.process_id, "user_endpoint": m.endpoint,
                         "client_tags": [{"key": k, "value": v} for k, v in sorted(m.client_tags.items())],
                         "task_offsets": m.task_offsets, "task_end_offsets": m.task_end_offsets,
                         "assignment": _assignment(m.assigned, m.standby),
                         "target_assignment": _assignment(g.target.get(m.member_id, {}),
                                                          g.standby_target.get(m.member_id, {})),
                         "is_classic": False}
                        for m in g.members.values()]}


@handler(apis.STREAMS_GROUP_DESCRIBE)
async def streams_group_describe(ctx: RequestContext):
    return describe_groups(streams_groups(ctx.app), ctx.request["group_ids"],
                           {"group_state": "", "topology": None, "members": []}, _describe)
