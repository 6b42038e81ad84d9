"""Dead letters under `--shards` (docs/shards.md, "Dead letters"): a `%DLQ%<group>` topic is not a
local topic there but a cluster topic led whole by the lowest live node (shard 0,
`ClusterNode.whole_dlq`), so it is one queue, as RocketMQ's DLQ of one broker, that a Kafka reader
(Spark), the native consumers and the console see whole, whichever shard dead-lettered a message.
A shard that dead-letters a message while another leads the DLQ does not append it to its own copy
of the queue (no client reads it there): it puts it in its schedule topic's timer queue, due now,
and the delay scheduler delivers it to the leader (CLUSTER_DELIVER, gateway.cluster.delivery):
stored here first, sent again after a crash and de-duplicated there, as any due message bound for
a queue another gateway leads."""
from __future__ import annotations

from gateway.cluster.ownership import DLQ_PREFIX
from gateway.remoting.common import delay_levels, now_ms
from semantics import routing


def placed(app, msg):
    """`msg` as this gateway appends it: itself, or a dead letter for a DLQ another shard leads
    through the timer queue, due now."""
    node = app.ownership
    if not msg.topic.startswith(DLQ_PREFIX) or not getattr(node, "whole_dlq", False) \
            or node.owns(msg.topic, msg.queue_id):
        return msg
    return routing.schedule_due_now(msg, now_ms(), delay_levels(app))
