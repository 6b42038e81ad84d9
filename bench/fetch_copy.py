"""`python -m bench.fetch_copy`: the gateway's CPU to serve Kafka Fetch answers of stored record
batches, with medium batches (fetch.SHARE_MIN_BYTES up to SPLICE_MIN_BYTES) sent as memoryviews of
the read buffer with one gathering sendmsg ("zero-copy") against copied into the answer as before
("copy": SHARE_MIN_BYTES set above every batch). In one process, no client: the store's read
(`fetch.read_batches`), the response frame (`codec.kafka.protocol.response_frame`) and the send to
a socket (`gateway.sendfile.send_parts`) whose other end a reader thread drains. The serving
thread's CPU (time.thread_time) per GB, in interleaved rounds (A B, B A, ...); prints each round, the
per-round ratio zero-copy / copy, its median, spread and bench.rounds verdict."""
from __future__ import annotations

import argparse
import os
import socket
import tempfile
import threading
import time
import types

import trio

import gateway.kafka.fetch as fetch
import store
from bench import rounds
from codec.kafka import apis, protocol, records
from gateway.sendfile import close_spliced, send_parts
from interop.inner_batch import entry_message, index_info

FETCH_VERSION = 12
MAX_BYTES = 1 << 20  # one partition's answer: fetch.max.partition.bytes' default


RECORDS_PER_BATCH = 8


def fill(s, batch_bytes: int, total_bytes: int) -> int:
    """Batches of RECORDS_PER_BATCH records, about `batch_bytes` each, to `total_bytes`; a batch's size."""
    value = os.urandom(batch_bytes // RECORDS_PER_BATCH)
    batch = records.build_batch([(1000 + i, None, value, []) for i in range(RECORDS_PER_BATCH)], base_timestamp=1000)
    parsed = records.parse_batches(batch)[0]
    for _ in range(max(1, total_bytes // len(batch))):
        s.append(entry_message("T", 0, parsed, index_info(parsed), {}, int(time.time() * 1000), False))
    return len(batch)


def _parts(frame) -> list:
    """The parts a connection writes for `frame` (as codec.kafka.connection.ServerConnection.send)."""
    view, parts, pos = memoryview(frame), [], 0
    for at, spliced in frame.splices:
        parts += [view[pos:at], *spliced.parts]
        pos = at
    return parts + [view[pos:]]


async def serve_all(app, sock: trio.SocketStream, high: int, batch_len: int) -> int:
    """Every batch of T/0 in answers of up to MAX_BYTES; the bytes sent."""
    offset, sent = 0, 0
    while offset < high:
        served = fetch.read_batches(app, "T", 0, offset, high, MAX_BYTES, True)
        body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
            {"topic": "T", "partitions": [{"partition_index": 0, "error_code": 0, "high_watermark": high,
                                           "last_stable_offset": high, "log_start_offset": 0,
                                           "records": served}]}]}
        frame = protocol.response_frame(apis.FETCH.key, FETCH_VERSION, 1, body)
        await send_parts(sock, _parts(frame))
        if hasattr(served, "parts"):
            close_spliced(served)
        sent += len(frame) + (frame.spliced_size if frame.splices else 0)
        offset += len(served) // batch_len * RECORDS_PER_BATCH
    return sent


def one_run(app, high: int, batch_len: int, copy: bool) -> float:
    """CPU seconds of the serving thread per GB sent."""
    fetch.SHARE_MIN_BYTES = 1 << 62 if copy else DEFAULT_SHARE_MIN
    a, b = socket.socketpair()
    b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    stop = threading.Event()

    def drain():
        buf = bytearray(1 << 20)
        while b.recv_into(buf):
            pass
        stop.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()

    async def main():
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(a))
        began = time.thread_time()
        sent = await serve_all(app, stream, high, batch_len)
        used = time.thread_time() - began
        await stream.aclose()
        return used, sent

    used, sent = trio.run(main)
    stop.wait(10)
    b.close()
    return used / (sent / 1e9)


DEFAULT_SHARE_MIN = fetch.SHARE_MIN_BYTES


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fetch_copy", description=__doc__)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--batch-bytes", type=int, default=16 << 10)
    p.add_argument("--total-mb", type=int, default=128)
    p.add_argument("--share-min", type=int, default=None,
                   help="the zero-copy side's fetch.SHARE_MIN_BYTES (default: the gateway's) to try smaller batches")
    args = p.parse_args(argv)
    global DEFAULT_SHARE_MIN
    DEFAULT_SHARE_MIN = args.share_min or DEFAULT_SHARE_MIN
    with tempfile.TemporaryDirectory(prefix="bench-fetch-copy-") as base:
        s = store.open(base)
        try:
            batch_len = fill(s, args.batch_bytes, args.total_mb << 20)
            app = types.SimpleNamespace(store=s)
            high = s.max_offset("T", 0)
            for copy in (False, True):
                one_run(app, high, batch_len, copy)  # warm-up (page cache, code paths), uncounted
            values = {False: [], True: []}
            for i in range(args.rounds):
                for copy in rounds.order(i, (False, True)):
                    values[copy].append(one_run(app, high, batch_len, copy))
                print(f"round {i}: zero-copy {values[False][-1]:.3f}, copy {values[True][-1]:.3f} CPU s/GB", flush=True)
        finally:
            s.close()
    ratios = rounds.per_round_ratios(values[False], values[True])
    verdict = rounds.compare(ratios, "lower", "zero-copy", "copy")
    print(f"{args.batch_bytes} B batches: CPU s/GB zero-copy median {rounds.median(values[False]):.3f}, "
          f"copy {rounds.median(values[True]):.3f}; ratio per round {[round(r, 2) for r in ratios]}, "
          f"median {verdict.median:.2f}, spread {verdict.low:.2f}..{verdict.high:.2f} "
          f"(CI {verdict.ci_low:.2f}..{verdict.ci_high:.2f}): {verdict.verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
