"""A bounded, seeded fuzzer for both ports: frames recorded from real clients (librdkafka and the
native RocketMQ client, through a recording proxy) are mutated and sent to a live gateway. Used by
tests/robustness/test_fuzz.py (a few thousand frames) and `make fuzz` (FUZZ_FRAMES, FUZZ_SEED)."""
from __future__ import annotations

import random
import socket
import struct
import threading

_LEN = struct.Struct(">i")


class RecordingProxy:
    """Forwards `listen` (host, port) to `target` and keeps every client→server frame (4-byte size
    prefix, as both protocols frame) in `frames`. A gateway advertising the proxy's host (with the
    same port) makes clients send all their traffic through it."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.target = target
        self.frames: list[bytes] = []
        self._server = socket.create_server(listen)
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        buf = bytearray()
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
                if record:
                    buf += data
                    while len(buf) >= 4:
                        n = 4 + _LEN.unpack_from(buf)[0]
                        if n < 4 or len(buf) < n:
                            break
                        self.frames.append(bytes(buf[:n]))
                        del buf[:n]
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop = True
        self._server.close()


def mutate(frame: bytes, rng: random.Random) -> bytes:
    """One mutation of a recorded frame: bit flips, byte overwrites with boundary values, a cut,
    an insertion, or a wrong size prefix; most keep the size prefix right, so the body is parsed."""
    b = bytearray(frame)
    kind = rng.randrange(6)
    body = range(4, max(len(b), 5))
    if kind == 0:
        for _ in range(rng.randint(1, 4)):
            i = rng.choice(body) if len(b) > 4 else 0
            if i < len(b):
                b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:
        for _ in range(rng.randint(1, 3)):
            i = rng.choice(body)
            v = rng.choice([b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff",
                            b"\x80\x00\x00\x00"])
            b[i:i + len(v)] = v
    elif kind == 2:
        b = b[:rng.randint(4, max(len(b) - 1, 4))]
    elif kind == 3:
        i = rng.choice(body)
        b[i:i] = rng.randbytes(rng.randint(1, 16))
    elif kind == 4:
        b[4:] = b[4:] + rng.randbytes(rng.randint(0, 8))
    else:
        _LEN.pack_into(b, 0, rng.choice([0, 1, 9, len(b) + 100, 0x7FFFFFFF, -1]))
        return bytes(b)
    if kind != 5:
        _LEN.pack_into(b, 0, len(b) - 4)
    return bytes(b)


def send_batch(port: int, frames: list[bytes], wait: float = 0.3) -> None:
    """Send `frames` on one connection, then read answers until EOF or `wait` of silence."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        try:
            s.sendall(b"".join(frames))
            s.settimeout(wait)
            while s.recv(65536):
                pass
        except (socket.timeout, OSError):
            pass


def fuzz(port: int, corpus: list[bytes], count: int, seed: int, per_connection: int = 20,
         workers: int = 8) -> None:
    """Send `count` mutated frames of `corpus` to `port` (deterministic for a seed)."""
    rng = random.Random(seed)
    batches = []
    for start in range(0, count, per_connection):
        batches.append([mutate(rng.choice(corpus), rng) for _ in range(min(per_connection, count - start))])
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not batches:
                    return
                batch = batches.pop()
            send_batch(port, batch)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
