"""Bad input on the gRPC port: malformed HTTP/2, malformed gRPC messages, oversized requests and
messages, unknown methods, deadlines that expire during a long poll, Telemetry streams that do
not begin with Settings. Each gets a clear status or a closed connection; the gateway stays up."""
from __future__ import annotations

import socket
import time

import grpc
import pytest

from grpc_raw import conversation, exchange
from grpc_sdk import GrpcGateway

pb = pytest.importorskip("rocketmq.grpc_protocol.service_pb2")
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg  # noqa: E402

MAX_MESSAGE = 64 * 1024


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = GrpcGateway(str(tmp_path_factory.mktemp("grpc-bad") / "data"), ["--max-message-bytes", str(MAX_MESSAGE)]).start()
    yield g
    g.stop()
    assert "Traceback" not in g.log()


@pytest.fixture(scope="module")
def stub(gw):
    channel = grpc.insecure_channel(gw.endpoints, options=[("grpc.max_send_message_length", 64 << 20)])
    yield sg.MessagingServiceStub(channel)
    channel.close()


def still_serves(stub):
    r = stub.QueryRoute(s.QueryRouteRequest(topic=d.Resource(name="bad-alive")), timeout=10)
    assert r.status.code == d.Code.OK and len(r.message_queues) > 0


def test_garbage_instead_of_the_preface_closes_the_connection(gw, stub):
    _, _, closed = exchange(gw.grpc_port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\x00" * 100)
    assert closed
    still_serves(stub)


def test_a_malformed_frame_after_the_preface_closes_the_connection(gw, stub):
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    data_on_stream_0 = b"\x00\x00\x01\x00\x00\x00\x00\x00\x00x"  # DATA must name a stream
    _, _, closed = exchange(gw.grpc_port, preface + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" + data_on_stream_0)
    assert closed
    still_serves(stub)


def test_unknown_method_is_unimplemented(gw, stub):
    trailers, _, _ = exchange(gw.grpc_port, conversation("NoSuchMethod", [b""]))
    assert trailers["grpc-status"] == "12"
    trailers, _, _ = exchange(gw.grpc_port, conversation("/other.Service/X", [b""]))
    assert trailers["grpc-status"] == "12"


def test_undecodable_request_is_internal(gw, stub):
    trailers, _, _ = exchange(gw.grpc_port, conversation("QueryRoute", [b"\xff\xff\xff"]))
    assert trailers["grpc-status"] == "13" and "decode" in trailers["grpc-message"]


def test_bad_grpc_timeout_and_content_type(gw, stub):
    trailers, _, _ = exchange(gw.grpc_port, conversation("QueryRoute", [b""], timeout="soon"))
    assert trailers["grpc-status"] == "13"
    trailers, _, _ = exchange(gw.grpc_port, conversation("QueryRoute", [b""], extra=[("content-type", "text/html")]))
    assert trailers.get(":status") == "415"


def test_oversized_body_is_message_body_too_large(stub):
    m = d.Message(topic=d.Resource(name="bad-big"), body=b"x" * (MAX_MESSAGE + 1),
                  system_properties=d.SystemProperties(message_id="id-1", message_type=d.MessageType.NORMAL))
    r = stub.SendMessage(s.SendMessageRequest(messages=[m]), timeout=10)
    assert r.status.code == d.Code.MESSAGE_BODY_TOO_LARGE


def test_oversized_request_is_resource_exhausted(stub):
    m = d.Message(topic=d.Resource(name="bad-big"), body=b"x" * (MAX_MESSAGE + 512 * 1024))
    with pytest.raises(grpc.RpcError) as err:
        stub.SendMessage(s.SendMessageRequest(messages=[m]), timeout=10)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    still_serves(stub)


def test_long_poll_answers_before_the_deadline(stub):
    stub.QueryRoute(s.QueryRouteRequest(topic=d.Resource(name="bad-poll")), timeout=10)  # creates the topic
    req = s.ReceiveMessageRequest(group=d.Resource(name="bad-poll-g"),
                                  message_queue=d.MessageQueue(topic=d.Resource(name="bad-poll"), id=-1), batch_size=1)
    req.invisible_duration.FromSeconds(30)
    req.long_polling_timeout.FromSeconds(20)
    got = list(stub.ReceiveMessage(req, timeout=2))  # after the deadline it would be DEADLINE_EXCEEDED
    assert [r.status.code for r in got] == [d.Code.MESSAGE_NOT_FOUND]


def test_invisible_time_out_of_range(stub):
    req = s.ReceiveMessageRequest(group=d.Resource(name="g"), batch_size=1,
                                  message_queue=d.MessageQueue(topic=d.Resource(name="bad-poll"), id=-1))
    req.invisible_duration.FromSeconds(1)
    got = list(stub.ReceiveMessage(req, timeout=5))
    assert got[0].status.code == d.Code.ILLEGAL_INVISIBLE_TIME


def test_bad_receipt_handles(stub):
    r = stub.AckMessage(s.AckMessageRequest(group=d.Resource(name="g"), topic=d.Resource(name="bad-poll"), entries=[
        s.AckMessageEntry(message_id="a", receipt_handle="junk"),
        s.AckMessageEntry(message_id="b", receipt_handle="0 5 123 bad-poll")]), timeout=5)
    assert r.status.code == d.Code.INVALID_RECEIPT_HANDLE
    assert [e.status.code for e in r.entries] == [d.Code.INVALID_RECEIPT_HANDLE] * 2
    r = stub.EndTransaction(s.EndTransactionRequest(topic=d.Resource(name="bad-poll"), transaction_id="nope",
                                                    resolution=d.TransactionResolution.COMMIT), timeout=5)
    assert r.status.code == d.Code.INVALID_TRANSACTION_ID


def test_telemetry_must_begin_with_settings(stub):
    def commands():
        yield s.TelemetryCommand(status=d.Status(code=d.Code.OK))
        time.sleep(5)
    with pytest.raises(grpc.RpcError) as err:
        list(stub.Telemetry(commands(), timeout=10, metadata=[("x-mq-client-id", "bad-telemetry")]))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Settings" in err.value.details()


def test_many_idle_connections_are_harmless(gw, stub):
    socks = [socket.create_connection(("127.0.0.1", gw.grpc_port)) for _ in range(50)]
    for sock in socks:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    still_serves(stub)
    for sock in socks:
        sock.close()
