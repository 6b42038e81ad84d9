"""What a consumer subscribes to: one topic's filter (tags, or SQL92 evaluated by the broker) in the
form heartbeats, pulls and CHECK_CLIENT_CONFIG carry it, and the retry topic `%RETRY%<group>` a
clustering push consumer also pulls (the broker re-delivers failed messages there)."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

from client.instance import ClientInstance
from codec.remoting import RequestCode as RC
from codec.remoting.bodies import dumps
from codec.remoting.message import tag_hash
from codec.remoting.tags import parse_tags

RETRY_PREFIX = "%RETRY%"


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


@dataclasses.dataclass
class Subscription:
    topic: str
    expression: str
    version: int
    expression_type: str = "TAG"  # or "SQL92" (MessageSelector.bySql): the broker filters, not us

    @classmethod
    def create(cls, topic: str, expression: str = "*", expression_type: str = "TAG") -> "Subscription":
        """A subscription versioned now; an empty tag expression means every tag."""
        expression_type = expression_type.upper()
        if expression_type == "TAG":
            expression = expression or "*"
        return cls(topic, expression, int(time.time() * 1000), expression_type)

    def to_json(self) -> dict:
        if self.expression_type != "TAG":
            return {"classFilterMode": False, "codeSet": [], "expressionType": self.expression_type,
                    "subString": self.expression, "subVersion": self.version, "tagsSet": [], "topic": self.topic}
        f = parse_tags(self.expression)
        tags = sorted(f.tags)
        return {"classFilterMode": False, "codeSet": [tag_hash(t) for t in tags],
                "expressionType": "TAG", "subString": f.expression, "subVersion": self.version,
                "tagsSet": tags, "topic": self.topic}


async def check_subscriptions(instance: ClientInstance, group: str, subscriptions: Iterable[Subscription]) -> None:
    """CHECK_CLIENT_CONFIG for every non-TAG subscription at every broker of its topic, as the
    Java client does: a broker that cannot compile the expression raises MQBrokerError."""
    for sub in subscriptions:
        if sub.expression_type == "TAG":
            continue
        route = await instance.route(sub.topic)
        for addr in route.brokers.values():
            await instance.invoke(addr, RC.CHECK_CLIENT_CONFIG, None, dumps(
                {"clientId": instance.client_id, "group": group, "subscriptionData": sub.to_json()}))
