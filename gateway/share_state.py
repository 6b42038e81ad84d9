"""A share group's state of the partitions this gateway leads (the pop engine's, `semantics.pop`):
what the share-group offset admin reads and changes, here or asked by the group's coordinator in a
cluster (`gateway.cluster.share_offsets`)."""
from __future__ import annotations


def start_and_lag(app, group: str, topic: str, p: int) -> tuple[int, int]:
    """(start offset, lag) of the group on the partition; (-1, -1) when it never consumed it."""
    state = app.pop.state(group, topic, p)
    if state is None:
        return -1, -1
    end = app.store.max_offset(topic, p)
    finished = len(state.done)
    return state.start, max(0, end - state.start - finished)


def reset(app, group: str, topic: str, p: int, start: int) -> int:
    """Start the group's partition over at `start`; the log end offset to wait for."""
    return app.pop.reset(group, topic, p, start)


def drop(app, group: str, topic_names=None) -> int:
    """Forget the group's share-partition state here (all topics, or these): the next fetch starts
    by `share.auto.offset.reset`. The log end offset to wait for."""
    end = 0
    for topic, p in app.pop.queues(group):
        if topic_names is None or topic in topic_names:
            end = max(end, app.pop.drop(group, topic, p))
            app.offsets.delete(group, topic, p)
    return end
