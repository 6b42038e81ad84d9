"""KIP-932 share sessions: which partitions a member fetches from, and the session epoch.

A ShareFetch with epoch 0 opens a session (replacing the member's earlier one) with the partitions
it names; each later request names the next epoch (1, 2, ... wrapping to 1 after 2^31-1), adds
the partitions it names and drops its `forgotten_topics_data`; epoch -1 closes the session after
its acknowledgements. A request with another epoch gets INVALID_SHARE_SESSION_EPOCH and changes
nothing; one for a member with no session SHARE_SESSION_NOT_FOUND. ShareAcknowledge follows the
same epochs but cannot open a session.

At most `max_sessions` sessions are open (Kafka's group.share.max.share.sessions, default 2 000):
a new one beyond it gets SHARE_SESSION_LIMIT_REACHED, as on Kafka 4.3.1, which never evicts a
session to make room (checked with the limit at 2: the third member's ShareFetch epoch 0 got 133,
and opened once another session had closed with its final epoch).
"""
from __future__ import annotations

import dataclasses

NONE, SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED = 0, 122, 123, 133
INITIAL, FINAL = 0, -1
MAX_EPOCH = 2 ** 31 - 1
MAX_SESSIONS = 2000


@dataclasses.dataclass
class ShareSession:
    group: str
    member: str
    epoch: int = 1  # the epoch the next request must carry
    partitions: dict = dataclasses.field(default_factory=dict)  # (topic, partition) -> None (ordered)


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


class ShareSessions:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.max_sessions = max_sessions

    def fetch(self, group: str, member: str, epoch: int, wanted: list, forgotten: list,
              may_open: bool = True) -> tuple[int, ShareSession | None]:
        """(error code, session) for a request with this epoch; the session's partitions updated."""
        key = (group, member)
        if epoch == INITIAL:
            if not may_open:
                return INVALID_SHARE_SESSION_EPOCH, None
            if key not in self.sessions and len(self.sessions) >= self.max_sessions:
                return SHARE_SESSION_LIMIT_REACHED, None
            session = self.sessions[key] = ShareSession(group, member)
        else:
            session = self.sessions.get(key)
            if session is None:
                return SHARE_SESSION_NOT_FOUND, None
            if epoch == FINAL:
                del self.sessions[key]
            elif epoch != session.epoch:
                return INVALID_SHARE_SESSION_EPOCH, None
            else:
                session.epoch = next_epoch(epoch)
        for tp in wanted:
            session.partitions[tp] = None
        for tp in forgotten:
            session.partitions.pop(tp, None)
        return NONE, session

    def close_member(self, group: str, member: str) -> None:
        self.sessions.pop((group, member), None)
