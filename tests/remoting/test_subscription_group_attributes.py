"""Subscription group attributes over raw remoting frames (semantics.subscription_groups): what
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP sets is listed by GET_ALL_SUBSCRIPTIONGROUP_CONFIG and kept across
a restart, DELETE_SUBSCRIPTIONGROUP drops it; refused attributes get SYSTEM_ERROR with the RocketMQ 5.5
broker's words (tests/grpc/test_grpc_lite_groups.py compares those with 5.5 through mqadmin) and
change nothing; malformed bodies are answered, never crash the gateway."""
from __future__ import annotations

import json

from codec.remoting import RequestCode as RC, ResponseCode as R
from wire import Peer


def update(p: Peer, body) -> tuple[int, str]:
    resp = p.call(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, json.dumps(body).encode())
    return resp.code, resp.remark or ""


def table(p: Peer) -> dict:
    return p.json_call(RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)["subscriptionGroupTable"]


def test_attributes_kept_listed_refused_and_dropped(gateway):
    p = Peer(gateway.namesrv)
    try:
        assert update(p, {"groupName": "lg", "attributes": {"+lite.bind.topic": "P", "+lite.sub.client.quota": "3"}})[0] == 0
        assert update(p, {"groupName": "lg", "attributes": {"+lite.sub.client.quota": "-2"}}) == \
            (R.SYSTEM_ERROR, "java.lang.RuntimeException: value is not in range(-1, 9223372036854775807)")
        assert update(p, {"groupName": "lg", "attributes": {"+lite.no.such": "1"}}) == \
            (R.SYSTEM_ERROR, "java.lang.RuntimeException: unsupported key: lite.no.such")
        for bad in (b"[1]", b"{", b'{"groupName": "lg", "attributes": [1]}', b'{"groupName": "lg", "attributes": {"+": 1}}',
                    b'{"groupName": "lg", "attributes": {"+lite.sub.client.quota": null}}'):
            assert p.call(RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, bad).code != 0
        assert table(p)["lg"]["attributes"] == {"lite.bind.topic": "P", "lite.sub.client.quota": "3"}
    finally:
        p.close()
    gateway.stop()
    gateway.start()
    p = Peer(gateway.namesrv)
    try:
        assert table(p)["lg"]["attributes"] == {"lite.bind.topic": "P", "lite.sub.client.quota": "3"}
        assert p.call(RC.DELETE_SUBSCRIPTIONGROUP, {"groupName": "lg"}).code == 0
        assert "lg" not in table(p)
    finally:
        p.close()
