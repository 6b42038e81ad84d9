"""What a stream of malformed frames costs a real gateway (issue 30): its log (one warning per peer
and minute, the rest counted and reported), its metric labels (no label per unknown API key or
request code) and its C heap (flat after a warm-up: measured as the size of the process's heap
mapping, not as time)."""
from __future__ import annotations

import os
import re
import socket
import struct
import urllib.request

from fuzz import RecordingProxy, fuzz
from gateway_process import free_port
from test_fuzz import PROXY_HOST, record_kafka

from codec.remoting import RemotingCommand, encode


def _send_and_close(port: int, data: bytes, until_closed: bool = True) -> None:
    """Send, then read until the gateway closes (or, `until_closed=False`, until its one answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        try:
            while s.recv(65536) and until_closed:
                pass
        except OSError:
            pass


def test_malformed_kafka_frames_are_logged_once_a_minute_and_counted(gateway_factory):
    g = gateway_factory()
    frames = 300
    for _ in range(frames):
        _send_and_close(g.kafka_port, struct.pack(">i", 5) + b"x" * 5)  # below the 10-byte minimum
    assert g.proc.poll() is None
    warned = [line for line in open(g.log_path, errors="replace") if "closing kafka connection from" in line]
    assert 1 <= len(warned) <= 2, warned[:5]  # one a minute: a second only if sending took over a minute
    assert g.stop() == 0
    log = open(g.log_path, errors="replace").read()
    summary = re.search(r"(\d+) more like this since the last report: closing kafka connection from 127\.0\.0\.1", log)
    assert summary is not None, log[-2000:]
    counted = sum(int(n) for n in re.findall(r"\((\d+) more since the last report\)", "".join(warned)))
    assert len(warned) + counted + int(summary.group(1)) == frames  # every one logged or counted


def _request_labels(http: str, protocol_name: str) -> set[str]:
    with urllib.request.urlopen(f"http://{http}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return set(re.findall(r'rocketgate_requests_total\{protocol="%s",request="([^"]*)"' % protocol_name, text)) | set(
        re.findall(r'rocketgate_request_errors_total\{protocol="%s",request="([^"]*)"' % protocol_name, text))


def test_unknown_api_keys_and_request_codes_do_not_grow_the_metric_labels(gateway_factory):
    http_port = free_port()
    g = gateway_factory(extra_args=["--http-port", str(http_port)])
    http = f"127.0.0.1:{http_port}"
    for key in range(1000, 1040):  # a request header any Kafka broker decodes, for APIs nobody has
        header = struct.pack(">hhih", key, 0, 1, 1) + b"c"  # api key, version, correlation id, client id
        _send_and_close(g.kafka_port, struct.pack(">i", len(header)) + header)
    for code in range(900_000, 900_040):
        _send_and_close(g.remoting_port, encode(RemotingCommand(code=code, opaque=1)), until_closed=False)
    kafka, remoting = _request_labels(http, "kafka"), _request_labels(http, "remoting")
    assert "unknown" in kafka and "unknown" in remoting
    assert not {label for label in kafka | remoting if label.isdigit()}, (kafka, remoting)


def _heap_kib(pid: int) -> int:
    """The size of the process's brk heap (glibc's main arena): what fragmentation grows."""
    with open(f"/proc/{pid}/smaps") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if line.endswith("[heap]"):
            return int(lines[i + 1].split()[1])
    return 0


def test_the_heap_stays_flat_under_a_stream_of_malformed_kafka_frames(gateway_factory):
    """Before the fix glibc's dynamic mmap threshold let the 256 KiB read buffers into the heap, and
    their shrunken remains fragmented it (the heap grew by 1-2 MiB per 100 000 fuzzed frames, for ever)."""
    g = gateway_factory(extra_args=["--advertised-host", PROXY_HOST])
    kafka = RecordingProxy((PROXY_HOST, g.kafka_port), ("127.0.0.1", g.kafka_port))
    try:
        record_kafka(f"{PROXY_HOST}:{g.kafka_port}", "HeapK")
        corpus = list(kafka.frames)
    finally:
        kafka.close()
    frames = int(os.environ.get("HEAP_FUZZ_FRAMES", "120000"))
    fuzz(g.kafka_port, corpus, 20_000, 30)  # warm-up: every code path and cache once
    before = _heap_kib(g.proc.pid)
    fuzz(g.kafka_port, corpus, frames, 31)
    after = _heap_kib(g.proc.pid)
    assert g.proc.poll() is None
    assert after - before < 512, f"heap grew {after - before} KiB over {frames} malformed frames ({before} -> {after})"
