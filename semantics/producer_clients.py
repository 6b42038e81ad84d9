"""Which client each Kafka producer id was handed to (InitProducerId): its client.id, address and
transactional.id, so the console can say who produced a batch (which carries only the producer id).
In memory since this start, the newest LIMIT producer ids."""
from __future__ import annotations

import collections

LIMIT = 10_000


class ProducerClients:
    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._by_id: collections.OrderedDict[int, dict] = collections.OrderedDict()

    def note(self, producer_id: int, client_id: str, host: str, transactional_id: str | None, at_ms: int) -> None:
        self._by_id.pop(producer_id, None)
        self._by_id[producer_id] = {"client_id": client_id, "host": host, "transactional_id": transactional_id or "",
                                    "at_ms": at_ms}
        while len(self._by_id) > self.limit:
            self._by_id.popitem(last=False)

    def get(self, producer_id: int) -> dict | None:
        return self._by_id.get(producer_id)
