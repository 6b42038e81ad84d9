"""The budget of request bytes buffered by all connections (--max-buffered-request-bytes): the
frame accounting it rests on, and many connections each sending a large frame slowly against a
small cap: reads pause (the peak stays near the cap), every request is still answered."""
from __future__ import annotations

import random
import socket
import struct
import threading
import time
import urllib.request

import trio
import trio.testing

from gateway.connections import Connection, Connections, FrameTracker
from codec.kafka import records
from tests.gateway_process import GatewayProcess, free_port


def split_frames(sizes: list[int], rng: random.Random) -> tuple[bytes, list[bytes]]:
    stream = b"".join(struct.pack(">i", n) + bytes(n) for n in sizes)
    reads, i = [], 0
    while i < len(stream):
        n = rng.choice((1, 2, 3, 5, 17, 100, 4000))
        reads.append(stream[i:i + n])
        i += n
    return stream, reads


def test_frame_tracker_counts_partial_and_ended_bytes():
    rng = random.Random(18)
    for _ in range(200):
        sizes = [rng.choice((0, 1, 6, 50, 3000)) for _ in range(rng.randint(1, 8))]
        stream, reads = split_frames(sizes, rng)
        ends = []  # where each frame ends in the stream
        pos = 0
        for n in sizes:
            pos += 4 + n
            ends.append(pos)
        tracker = FrameTracker()
        at = 0
        for data in reads:
            tracker.received(data, 0.0)
            before, at = at, at + len(data)
            done = [e for e in ends if before < e <= at]
            last_end = max([0] + [e for e in ends if e <= at])
            expected_ended = sum(e - ([0] + ends)[ends.index(e)] for e in done)
            assert tracker.ended_bytes == expected_ended
            assert tracker.partial_bytes == at - last_end
            assert (tracker.partial_since(1.0) > 0) == (at != last_end)


def test_connections_caught_mid_frame_at_the_cap_finish_one_at_a_time():
    """Three connections each hold part of a 200-byte frame, over a 150-byte cap: the first to ask
    reads on (the leader), the others wait even though their bytes are there; each finished frame
    lets the next waiter lead, so they never all wait for each other."""
    async def main() -> list[int]:
        conns = Connections(150)
        budget = conns.request_bytes
        pairs = [trio.testing.memory_stream_pair() for _ in range(3)]
        server = [Connection(s, conns, None, None, 60.0) for s, _ in pairs]
        for _, client in pairs:
            await client.send_all(struct.pack(">i", 196) + bytes(60))
        for conn in server:
            assert len(await conn.receive_some(1000)) == 64
        assert budget.total == 192
        finished = []

        async def finish(i: int) -> None:
            got = 64
            while got < 200:
                got += len(await server[i].receive_some(1000))
            finished.append(i)

        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(finish, i)
                await trio.testing.wait_all_tasks_blocked()
            assert budget.leader is server[0] and budget.pauses == 2
            for i in (2, 1, 0):  # the rest arrives last for the leader
                await pairs[i][1].send_all(bytes(136))
                await trio.testing.wait_all_tasks_blocked()
                if i:
                    assert finished == []  # waiting for room, not for bytes
        for conn in server:
            conns.closed(conn)
        assert budget.total == 0 and budget.leader is None
        return finished

    assert trio.run(main) == [0, 1, 2]


def metrics(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("rocketgate_") and " " in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def produce_frame(topic: str, value_size: int, correlation: int) -> bytes:
    """A Produce v3 request (acks=1) of one batch holding one record of `value_size` bytes."""
    batch = records.build_batch([(0, None, b"v" * value_size, [])])
    name = topic.encode()
    body = (struct.pack(">hhih", 0, 3, correlation, 4) + b"slow"  # header v1: client id "slow"
            + struct.pack(">h", -1) + struct.pack(">hi", 1, 30000) + struct.pack(">i", 1)
            + struct.pack(">h", len(name)) + name + struct.pack(">i", 1)
            + struct.pack(">ii", 0, len(batch)) + batch)
    return struct.pack(">i", len(body)) + body


def error_code_of(response: bytes) -> int:
    # correlation id, [topics: name, [partitions: index, error_code, ...]]
    pos = 4 + 4
    (name_len,) = struct.unpack_from(">h", response, pos)
    pos += 2 + name_len + 4 + 4
    return struct.unpack_from(">h", response, pos)[0]


def recv_frame(sock: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        head += sock.recv(4 - len(head))
    (n,) = struct.unpack(">i", head)
    body = b""
    while len(body) < n:
        chunk = sock.recv(n - len(body))
        assert chunk, "closed before the answer"
        body += chunk
    return body


def test_many_slow_large_frames_pause_reads_at_the_cap(tmp_path):
    cap_mib = 4
    http_port = free_port()
    g = GatewayProcess(str(tmp_path / "data"), extra_args=[
        "--http-port", str(http_port), "--max-buffered-request-bytes", f"{cap_mib}m",
        "--max-message-bytes", "4m"]).start()
    senders, frame_mib = 24, 2  # 48 MiB if every connection buffered its whole frame
    answers: list[int | None] = [None] * senders
    try:
        socks = [socket.create_connection(("127.0.0.1", g.kafka_port), timeout=60) for _ in range(senders)]
        for s in socks:  # small kernel buffers: the bytes the gateway does not read stay with the client
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)

        def send_slowly(k: int) -> None:
            frame = produce_frame(f"budget-{k}", frame_mib * 1024 * 1024 - 200, k)
            for i in range(0, len(frame), 64 * 1024):
                socks[k].sendall(frame[i:i + 64 * 1024])
                time.sleep(0.01)
            answers[k] = error_code_of(recv_frame(socks[k]))

        threads = [threading.Thread(target=send_slowly, args=(k,)) for k in range(senders)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        m = metrics(http_port)
        assert answers == [0] * senders, answers
        assert m["rocketgate_read_pauses_total"] > 0
        # the cap, plus at most one read (256 KiB) per connection and the leader's frame
        assert m["rocketgate_buffered_request_bytes_peak"] < (cap_mib + frame_mib) * 2**20 + senders * 2**18
        assert m["rocketgate_buffered_request_bytes"] == 0
        for s in socks:
            s.close()
        assert "Traceback" not in g.log()
    finally:
        g.stop()
