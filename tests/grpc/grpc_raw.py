"""A raw HTTP/2 gRPC client on a plain socket (h2, client side), for bad-input and fuzz tests:
it can send what grpcio never would."""
from __future__ import annotations

import socket

import h2.config
import h2.connection
import h2.events

from codec.grpc import frame

SERVICE = "/apache.rocketmq.v2.MessagingService/"


def conversation(method: str, payloads: list[bytes], timeout: str | None = None, extra=()):
    """The client's bytes of one call: preface, SETTINGS, HEADERS, DATA (one gRPC message each),
    and the client-side h2 connection that sent them (for `exchange` to read the answer with)."""
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    headers = [(":method", "POST"), (":scheme", "http"), (":path", method if method.startswith("/") else SERVICE + method),
               (":authority", "localhost"), ("content-type", "application/grpc"), ("te", "trailers"), *extra]
    if timeout:
        headers.append(("grpc-timeout", timeout))
    conn.send_headers(1, headers)
    for i, p in enumerate(payloads):
        conn.send_data(1, frame(p), end_stream=i == len(payloads) - 1)
    if not payloads:
        conn.end_stream(1)
    return conn.data_to_send(), conn


def exchange(port: int, data, wait: float = 5.0) -> tuple[dict, list[bytes], bool]:
    """Send `data` (bytes, or a `conversation`), read until the stream ends or the server closes:
    (trailers, response messages, whether the server ended the connection)."""
    if isinstance(data, tuple):
        data, conn = data
    else:
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        conn.data_to_send()  # the preface, if any, is inside `data`
    sock = socket.create_connection(("127.0.0.1", port), timeout=wait)
    trailers, body, closed = {}, b"", False
    try:
        sock.sendall(data)
        while True:
            try:
                chunk = sock.recv(65536)
            except (socket.timeout, ConnectionResetError):
                closed = True
                break
            if not chunk:
                closed = True
                break
            try:
                events = conn.receive_data(chunk)
            except Exception:  # noqa: BLE001 - a fuzzed exchange may confuse our own side
                closed = True
                break
            done = False
            for e in events:
                if isinstance(e, h2.events.ResponseReceived) or isinstance(e, h2.events.TrailersReceived):
                    trailers.update(dict(e.headers))
                elif isinstance(e, h2.events.DataReceived):
                    body += e.data
                    conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                elif isinstance(e, h2.events.ConnectionTerminated):
                    done = closed = True
                elif isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)):
                    done = True
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
            if done:
                break
    finally:
        sock.close()
    messages = []
    while len(body) >= 5:
        size = int.from_bytes(body[1:5], "big")
        messages.append(body[5:5 + size])
        body = body[5 + size:]
    return trailers, messages, closed
