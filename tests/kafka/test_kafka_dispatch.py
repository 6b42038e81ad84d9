"""gateway.kafka.handlers.handle: the registry and the typed context (no server)."""
import types

import trio

from codec.kafka import apis, protocol
from gateway.cluster.ownership import SINGLE_NODE
from gateway.kafka import errors, handlers
from gateway.kafka.registry import HANDLERS


def test_every_api_but_api_versions_has_a_handler():
    assert {a.key for a in apis.ALL} - set(HANDLERS) == {apis.API_VERSIONS.key}


def _call(conn, api, version, body):
    frame = protocol.request_frame(api.key, version, 5, body, client_id="c1")[4:]
    header = protocol.parse_header(frame)
    out = trio.run(handlers.handle, conn, header, frame)
    return protocol.decode_response(api.key, version, bytes(out)[4:])


def test_find_coordinator_answers_with_the_connection_facts():
    no_topic_changes = types.SimpleNamespace(topics=types.SimpleNamespace(submission=0))
    app = types.SimpleNamespace(config=types.SimpleNamespace(advertised="10.1.2.3"), security=None,
                                store=no_topic_changes, ownership=SINGLE_NODE)
    conn = types.SimpleNamespace(app=app, client_id="c1", peer_host="127.0.0.1", local_port=19092)
    correlation, body = _call(conn, apis.FIND_COORDINATOR, 1, {"key": "g", "key_type": 0})
    assert correlation == 5
    assert (body["error_code"], body["host"], body["port"]) == (errors.NONE, "10.1.2.3", 19092)

