"""The Kafka server connection: the sans-I/O framing (codec.kafka.connection), the gateway's error
policy around its handlers, and the memory one large frame costs a real gateway."""
from __future__ import annotations

import logging
import struct
import types

import pytest
import trio
from kafka_raw import RawClient
from shard_aware import serving_pid

from codec.kafka import protocol
from codec.kafka.connection import CLOSED, NEED_DATA, LocalProtocolError, RemoteProtocolError, Request, ServerConnection
from codec.kafka.schema import DecodeError, Frame, Spliced
from gateway.kafka import connection as kafka_connection
from gateway.kafka import handlers
from security.audit import RateLimitedLog

METADATA, FETCH, API_VERSIONS = 3, 1, 18


def _metadata(correlation: int, topic: str = "t") -> bytes:
    return protocol.request_frame(METADATA, 9, correlation, {"topics": [{"name": topic}]})


def _drain(conn: ServerConnection) -> list[Request]:
    events = []
    while isinstance(event := conn.next_event(), Request):
        events.append(event)
    assert event is NEED_DATA
    return events


# ---------------------------------------------------------------- receiving

def test_requests_fed_byte_by_byte():
    frames = [_metadata(1), protocol.request_frame(API_VERSIONS, 3, 2, {})]
    conn = ServerConnection(1 << 20)
    events = []
    for byte in b"".join(frames):
        conn.receive_data(bytes([byte]))
        events += _drain(conn)
    assert [(e.header.api_key, e.header.api_version, e.header.correlation_id) for e in events] == [
        (METADATA, 9, 1), (API_VERSIONS, 3, 2)]
    assert [bytes(e.payload) for e in events] == [f[4:] for f in frames]
    assert events[0].header.client_id == "rocketgate"


def test_several_requests_in_one_chunk_are_views_of_it():
    chunk = _metadata(1) + _metadata(2, "other") + _metadata(3)
    conn = ServerConnection(1 << 20)
    conn.receive_data(chunk)
    events = _drain(conn)
    assert [e.header.correlation_id for e in events] == [1, 2, 3]
    assert all(e.payload.obj is chunk and e.payload.readonly for e in events)  # no copy
    body = protocol.decode_request(events[1].header, events[1].payload)
    assert body["topics"][0]["name"] == "other"


def test_a_frame_over_several_chunks_is_assembled_once():
    frame = _metadata(7, "x" * 5000)
    conn = ServerConnection(1 << 20)
    for start in range(0, len(frame), 1000):
        conn.receive_data(frame[start:start + 1000])
        events = _drain(conn)
        assert len(events) == (1 if start + 1000 >= len(frame) else 0)
    assert bytes(events[0].payload) == frame[4:] and events[0].payload.readonly


def test_oversize_frame_is_refused_from_its_size_prefix():
    conn = ServerConnection(1000)
    conn.receive_data(struct.pack(">i", 1001))  # no body at all: refused before any is buffered
    with pytest.raises(RemoteProtocolError, match="frame size 1001 outside"):
        conn.next_event()
    conn.receive_data(b"\x00" * 1001)
    assert conn.next_event() is CLOSED  # the connection is done


@pytest.mark.parametrize("size", [-1, -(1 << 31), 0, 9])
def test_negative_or_short_sizes_are_protocol_errors(size):
    conn = ServerConnection(1 << 20)
    conn.receive_data(struct.pack(">i", size) + b"\x00" * 16)
    with pytest.raises(RemoteProtocolError):
        conn.next_event()
    assert conn.next_event() is CLOSED  # the bytes after a bad size are never read as a frame


def test_truncated_header_is_a_protocol_error():
    head = struct.pack(">hhih", METADATA, 9, 5, 50) + b"ab"  # client id announces 50 bytes, has 2
    conn = ServerConnection(1 << 20)
    conn.receive_data(struct.pack(">i", len(head)) + head)
    with pytest.raises(RemoteProtocolError, match="bad request header") as info:
        conn.next_event()
    assert isinstance(info.value, DecodeError)  # one `except DecodeError` covers every client fault


def test_eof_ends_the_connection_between_or_inside_frames():
    conn = ServerConnection(1 << 20)
    conn.receive_data(_metadata(1) + _metadata(2)[:9])
    conn.receive_data(b"")
    assert isinstance(conn.next_event(), Request)
    assert conn.next_event() is CLOSED


# ---------------------------------------------------------------- answering

def _answered(conn: ServerConnection, frame) -> list:
    conn.receive_data(_metadata(int.from_bytes(frame[4:8], "big")))
    assert isinstance(conn.next_event(), Request)
    return conn.send(frame)


def test_a_response_with_splices_is_header_bytes_then_the_opaque_parts():
    stored = b"B" * 300
    body = lambda records: {"responses": [{"topic": "t", "partitions": [  # noqa: E731
        {"partition_index": 0, "high_watermark": 1, "records": records}]}]}
    whole = protocol.response_frame(FETCH, 12, 9, body(stored))
    part = object()  # what the gateway puts there (a file range); the codec passes it through
    spliced = protocol.response_frame(FETCH, 12, 9, body(Spliced([part], len(stored))))
    parts = _answered(ServerConnection(1 << 20), spliced)
    assert part in parts
    at = parts.index(part)
    head, tail = b"".join(parts[:at]), b"".join(parts[at + 1:])
    assert head + stored + tail == bytes(whole)
    assert all(type(p) is memoryview and p.obj is spliced for p in parts if p is not part)  # no copy


def test_responses_must_answer_the_oldest_request():
    conn = ServerConnection(1 << 20)
    with pytest.raises(LocalProtocolError):
        conn.send(protocol.response_frame(API_VERSIONS, 0, 1, {}))
    conn.receive_data(_metadata(1) + _metadata(2) + _metadata(3))
    assert len(_drain(conn)) == 3
    with pytest.raises(LocalProtocolError, match="correlation id 2, expected 1"):
        conn.send(protocol.response_frame(API_VERSIONS, 0, 2, {}))
    conn.send_nothing()  # request 2 (an acks=0 produce)
    assert b"".join(conn.send(protocol.response_frame(API_VERSIONS, 0, 3, {})))[4:8] == b"\x00\x00\x00\x03"
    with pytest.raises(LocalProtocolError):
        conn.send_nothing()


# ---------------------------------------------------------------- the gateway's error policy

def _serve_and_call(fake_handle, frame: bytes) -> bytes:
    """Serve one connection with `fake_handle` as the handler dispatch; send `frame` on it and a
    Metadata request on a second connection; what the first read back (b"" once closed)."""
    app = types.SimpleNamespace(config=types.SimpleNamespace(max_frame_bytes=1 << 20))

    async def main():
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners,
                               lambda s: kafka_connection.handle_connection(s, app), listeners)
            first = await trio.open_tcp_stream("127.0.0.1", port)
            await first.send_all(frame)
            got = b""
            with trio.fail_after(10):
                while chunk := await first.receive_some():
                    got += chunk
            second = await trio.open_tcp_stream("127.0.0.1", port)  # the server still serves
            await second.send_all(_metadata(42))
            with trio.fail_after(10):
                assert (await second.receive_some())[4:8] == struct.pack(">i", 42)
            nursery.cancel_scope.cancel()
        return got

    original = handlers.handle
    handlers.handle = fake_handle
    try:
        return trio.run(main)
    finally:
        handlers.handle = original


def _fake(error_for_topic: str, error: Exception):
    async def handle(conn, header, payload):
        topic = protocol.decode_request(header, payload)["topics"][0]["name"]
        if topic == error_for_topic:
            raise error
        return protocol.response_frame(METADATA, header.api_version, header.correlation_id, {})
    return handle


def _ours(caplog) -> list:
    """The records of the gateway's Kafka logger: a client thread an earlier test left behind (kafka-python
    logs ERROR 'Connection failed' from its own thread) may log into the same capture meanwhile."""
    return [r for r in caplog.records if r.name == "rocketgate.kafka"]


def test_a_handler_bug_is_logged_with_its_traceback_and_closes_only_that_connection(caplog):
    with caplog.at_level(logging.WARNING, logger="rocketgate.kafka"):
        got = _serve_and_call(_fake("bug", KeyError("no such key")), _metadata(1, "ok") + _metadata(2, "bug"))
    assert struct.unpack_from(">i", got, 4)[0] == 1 and len(got) == 4 + struct.unpack_from(">i", got)[0]
    [record] = _ours(caplog)
    assert record.levelno == logging.ERROR and record.exc_info[0] is KeyError
    assert "3 v9 request failed" in record.getMessage()


@pytest.mark.parametrize("error", [DecodeError("truncated"), RemoteProtocolError("bad")])
def test_a_request_that_does_not_decode_closes_quietly_with_one_warning(caplog, error, monkeypatch):
    monkeypatch.setattr(kafka_connection, "MALFORMED_LOG", RateLimitedLog(kafka_connection.log))  # a fresh minute
    with caplog.at_level(logging.WARNING, logger="rocketgate.kafka"):
        got = _serve_and_call(_fake("bad", error), _metadata(1, "bad"))
    assert got == b""
    [record] = _ours(caplog)
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "malformed 3 v9 request" in record.getMessage()


# ---------------------------------------------------------------- a real gateway

def test_bad_utf8_in_a_request_is_a_protocol_error_not_a_bug(gateway):
    frame = bytearray(_metadata(1, "abc"))
    at = frame.index(b"abc")
    frame[at:at + 3] = b"\xff\xfe\xfd"
    c = RawClient(gateway.kafka_bootstrap)
    c.send_raw(bytes(frame))
    assert c.is_closed()
    c.close()
    other = RawClient(gateway.kafka_bootstrap)
    assert other.call(API_VERSIONS, 3, {})["error_code"] == 0
    other.close()
    log = gateway.log()
    assert "malformed 3 v9 request: bad utf-8 string" in log and "Traceback" not in log


def _memory(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return {k: int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}


def test_a_large_frame_costs_the_gateway_about_one_copy(gateway_factory):
    frame_size = 90 * 1024 * 1024
    g = gateway_factory(extra_args=["--max-frame-bytes", "100m"])
    c = RawClient(g.kafka_bootstrap, timeout=60)
    assert c.call(API_VERSIONS, 0, {})["error_code"] == 0  # warmed up
    pid = serving_pid(g.proc.pid, g.data_dir)  # the process reading the frame
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = _memory(pid)
    assert before["VmHWM"] <= before["VmRSS"] + (1 << 20)
    head = protocol.request_frame(API_VERSIONS, 0, 7, {})[4:]  # ApiVersions ignores the rest
    c.sock.sendall(struct.pack(">i", frame_size) + head)
    chunk = b"\x00" * (1 << 20)
    left = frame_size - len(head)
    while left:
        n = min(left, len(chunk))
        c.sock.sendall(chunk[:n])
        left -= n
    correlation, body = protocol.decode_response(API_VERSIONS, 0, c.recv_frame())
    assert correlation == 7 and body["error_code"] == 0  # the whole frame was read
    growth = _memory(pid)["VmHWM"] - before["VmRSS"]
    c.close()
    assert frame_size * 0.9 < growth < frame_size * 1.6, growth / frame_size
