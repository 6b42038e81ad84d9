"""KIP-360: an InitProducerId naming the re-initialising client's producer id and epoch (a producer
recovering from an abortable error keeps its producer id). Against Apache Kafka 4.3.1 first, then the
gateway: the current (id, epoch) gets the next epoch of the same id; the same request again (its
answer lost) gets that answer again, not another bump; an older epoch or another producer id (another
instance took over) is PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4); an id and epoch for a
transactional id nobody initialised yet start it at epoch 0; one of the two without the other is
INVALID_REQUEST. Before, the gateway ignored both fields and bumped the epoch every time."""
from __future__ import annotations

import pytest
from kafka_raw import RawClient
from test_transactions_v2 import _init_transactional, bootstrap  # noqa: F401  (the fixture: kafka, gateway)

pytestmark = pytest.mark.timeout(400)
NONE, INVALID_PRODUCER_EPOCH, INVALID_REQUEST, PRODUCER_FENCED = 0, 47, 42, 90


def _init(client: RawClient, tid: str, pid: int, epoch: int, version: int = 5) -> dict:
    return client.call(22, version, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                     "producer_id": pid, "producer_epoch": epoch})


def test_init_producer_id_with_the_clients_id_and_epoch(bootstrap):  # noqa: F811
    client = RawClient(bootstrap, timeout=60)
    first = _init_transactional(client, "kip360")
    pid, epoch = first["producer_id"], first["producer_epoch"]
    again = _init(client, "kip360", pid, epoch)
    assert (again["error_code"], again["producer_id"], again["producer_epoch"]) == (NONE, pid, epoch + 1)
    retried = _init(client, "kip360", pid, epoch)  # the answer above was lost: the same answer
    assert (retried["error_code"], retried["producer_id"], retried["producer_epoch"]) == (NONE, pid, epoch + 1)
    older = _init(client, "kip360", pid, epoch + 7)
    assert older["error_code"] == PRODUCER_FENCED
    assert _init(client, "kip360", pid + 4242, 0)["error_code"] == PRODUCER_FENCED
    assert _init(client, "kip360", pid + 4242, 0, version=3)["error_code"] == INVALID_PRODUCER_EPOCH
    assert _init(client, "kip360", pid, -1)["error_code"] == INVALID_REQUEST
    current = _init(client, "kip360", pid, epoch + 1)  # nothing above changed it
    assert (current["error_code"], current["producer_id"], current["producer_epoch"]) == (NONE, pid, epoch + 2)
    fresh = _init(client, "kip360-new", 777777, 3)
    assert (fresh["error_code"], fresh["producer_epoch"]) == (NONE, 0)
