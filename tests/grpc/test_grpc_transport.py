"""gateway.grpc.transport over a real socket: a trio server (in a thread) with test methods, the
grpcio client as the peer. Unary, server streaming, bidi, statuses, deadlines, sizes, flow control."""
import functools
import threading

import grpc
import pytest
import trio

from codec.grpc import StatusCode
from gateway.grpc.transport import CallEnded, GrpcConnection

MAX = 2 * 1024 * 1024


async def echo(call):
    await call.send(await call.receive_one())


async def count(call):
    n = int(await call.receive_one())
    for i in range(n):
        await call.send(str(i).encode())


async def chat(call):
    while (msg := await call.receive()) is not None:
        await call.send(msg.upper())


async def sleep(call):
    await call.receive_one()
    await trio.sleep_forever()


async def fail(call):
    raise CallEnded(StatusCode.INVALID_ARGUMENT, "nope: bad argument")


async def crash(call):
    raise RuntimeError("a bug")


async def size(call):
    payload = await call.receive_one()
    await call.send(str(len(payload)).encode())


async def big(call):
    n = int(await call.receive_one())
    await call.send(b"z" * n)


async def batch(call):
    n, each = (int(x) for x in (await call.receive_one()).split())
    await call.send_many([bytes([65 + i % 26]) * each for i in range(n)])


METHODS = {f"/t.T/{fn.__name__}": fn for fn in (echo, count, chat, sleep, fail, crash, size, big, batch)}


@pytest.fixture(scope="module")
def server():
    ready = threading.Event()
    box = {}

    async def main():
        async def handler(stream):
            await GrpcConnection(stream, METHODS, max_message_size=MAX).serve()
        async with trio.open_nursery() as nursery:
            box["scope"], box["token"] = nursery.cancel_scope, trio.lowlevel.current_trio_token()
            listeners = await nursery.start(functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1"))
            box["port"] = listeners[0].socket.getsockname()[1]
            ready.set()

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    assert ready.wait(10)
    channel = grpc.insecure_channel(f"127.0.0.1:{box['port']}", options=[
        ("grpc.max_receive_message_length", 64 * 1024 * 1024), ("grpc.max_send_message_length", 64 * 1024 * 1024)])
    yield channel
    channel.close()
    trio.from_thread.run_sync(box["scope"].cancel, trio_token=box["token"])
    thread.join(10)


def unary(channel, name, payload, **kw):
    return channel.unary_unary(f"/t.T/{name}")(payload, **kw)


def test_unary(server):
    assert unary(server, "echo", b"hi") == b"hi"
    assert unary(server, "echo", b"") == b""


def test_server_streaming(server):
    got = list(server.unary_stream("/t.T/count")(b"50", timeout=10))
    assert got == [str(i).encode() for i in range(50)]


@pytest.mark.parametrize("n, each", [(40, 100_000), (3, 0), (1, 16_379), (33, 1_100)])
def test_send_many_arrives_as_separate_messages_across_frames_and_windows(server, n, each):
    got = list(server.unary_stream("/t.T/batch")(f"{n} {each}".encode(), timeout=10))
    assert got == [bytes([65 + i % 26]) * each for i in range(n)]


def test_bidi_streaming(server):
    got = list(server.stream_stream("/t.T/chat")(iter([b"a", b"bc", b"def"]), timeout=10))
    assert got == [b"A", b"BC", b"DEF"]


def test_unknown_method_is_unimplemented(server):
    with pytest.raises(grpc.RpcError) as err:
        unary(server, "nosuch", b"x", timeout=5)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "/t.T/nosuch" in err.value.details()


def test_status_and_message_trailers(server):
    with pytest.raises(grpc.RpcError) as err:
        unary(server, "fail", b"x", timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == "nope: bad argument"


def test_a_failing_method_is_internal_and_the_connection_lives(server):
    with pytest.raises(grpc.RpcError) as err:
        unary(server, "crash", b"x", timeout=5)
    assert err.value.code() == grpc.StatusCode.INTERNAL
    assert unary(server, "echo", b"still") == b"still"


def test_deadline_exceeded(server):
    with pytest.raises(grpc.RpcError) as err:
        unary(server, "sleep", b"x", timeout=0.5)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert unary(server, "echo", b"after") == b"after"


def test_large_request_and_response_cross_the_flow_control_windows(server):
    assert unary(server, "size", b"q" * (MAX - 10), timeout=30) == str(MAX - 10).encode()
    assert unary(server, "big", str(3 * 1024 * 1024).encode(), timeout=30) == b"z" * (3 * 1024 * 1024)


def test_oversized_request_is_resource_exhausted(server):
    with pytest.raises(grpc.RpcError) as err:
        unary(server, "size", b"q" * (MAX + 1), timeout=30)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert unary(server, "echo", b"ok") == b"ok"


def test_many_concurrent_calls(server):
    futures = [server.unary_unary("/t.T/echo").future(str(i).encode(), timeout=20) for i in range(200)]
    assert [f.result() for f in futures] == [str(i).encode() for i in range(200)]


def test_http2_frame_tracker_sees_partial_frames():
    from gateway.grpc.connection import Http2FrameTracker
    t = Http2FrameTracker()
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    settings = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    data = b"\x00\x00\x05\x00\x00\x00\x00\x00\x01hello"
    t.received(preface + settings, 1.0)
    assert t.partial_since(5.0) == 0.0
    t.received(data[:7], 2.0)  # half a frame header
    assert t.partial_since(5.0) == 3.0
    t.received(data[7:12], 3.0)  # the header whole, part of the payload
    assert t.partial_since(5.0) == 3.0
    t.received(data[12:], 4.0)
    assert t.partial_since(5.0) == 0.0
