"""Connection pressure (issue 18): a cap on open connections, idle timeouts, and the descriptor
limit (EMFILE): the gateway logs once, keeps serving the connections it has, and background
writes (the flush service's checkpoint) that fail meanwhile are retried, never fatal."""
from __future__ import annotations

import resource
import socket
import time

from client import Message, Producer

import pytest


def closed_by_server(sock: socket.socket, timeout: float) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionError:
        return True


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def wait_log(g, text: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        log = g.log()
        if text in log or time.monotonic() > deadline:
            return log
        time.sleep(0.2)


def test_connections_over_the_cap_are_refused_and_idle_ones_closed(gateway_factory):
    g = gateway_factory(extra_args=["--max-connections", "10", "--connections-max-idle-ms", "1500",
                                    "--remoting-channel-max-idle-seconds", "60"])
    held = [connect(g.remoting_port) for _ in range(10)]
    time.sleep(0.3)
    extra = connect(g.remoting_port)
    assert closed_by_server(extra, 3), "the connection over the cap was kept"
    for s in held[:5]:
        s.close()
    time.sleep(0.3)
    p = Producer("cap-pg", g.namesrv).start()
    try:
        p.send(Message("CapT", b"x"))
    finally:
        p.shutdown()
    assert "refusing new ones" in g.log()
    # Kafka's connections.max.idle.ms: a connection that sends nothing is closed after it ...
    idle = connect(g.kafka_port)
    assert closed_by_server(idle, 6)
    # ... the remoting ones (60 s here) stay.
    assert not closed_by_server(held[5], 0.5)
    for s in held[5:]:
        s.close()
    assert "Traceback" not in g.log()


def test_descriptor_limit_is_survived_and_logged_once(gateway_factory):
    g = gateway_factory(flush="async")
    lo = 160
    resource.prlimit(g.proc.pid, resource.RLIMIT_NOFILE, (lo, lo))
    socks = []
    try:
        for _ in range(lo + 40):  # more than the gateway has descriptors for: the rest wait in the backlog
            socks.append(connect(g.remoting_port))
        log = wait_log(g, "checkpoint write failed")
        assert "accept failed" in log and "checkpoint write failed" in log
        time.sleep(2)  # several flush intervals fail meanwhile
        assert g.proc.poll() is None, "the gateway died at the descriptor limit"
        log = g.log()
        assert log.count("accept failed") == 1 and log.count("checkpoint write failed") == 1
    finally:
        for s in socks:
            s.close()
    log = wait_log(g, "checkpoint written again")
    assert "checkpoint written again" in log and "accepting connections again" in log
    p = Producer("fd-pg", g.namesrv).start()
    try:
        p.send(Message("FdT", b"x"))
    finally:
        p.shutdown()
    assert "Traceback" not in g.log()


def test_slowloris_connections_are_dropped_after_the_request_deadline(gateway_factory):
    g = gateway_factory(extra_args=["--request-deadline-ms", "1500"])
    idle = connect(g.kafka_port)  # nothing sent: only the idle timeout (10 min) applies
    half_prefix = connect(g.remoting_port)
    half_prefix.sendall(b"\x00\x00")
    trickle = connect(g.kafka_port)
    frame = b"\x00\x00\x00\x20" + bytes(32)
    start = time.monotonic()
    closed = False
    for byte in frame:  # one byte every 0.2 s: never a whole request within the deadline
        try:
            trickle.sendall(bytes([byte]))
        except OSError:
            closed = True
            break
        if closed_by_server(trickle, 0.2):
            closed = True
            break
    assert closed and time.monotonic() - start < 6
    assert closed_by_server(half_prefix, 3)
    assert not closed_by_server(idle, 0.5)
    for s in (idle, half_prefix, trickle):
        s.close()
    assert "took over 2 s to arrive" in g.log() or "took over 1 s to arrive" in g.log()
    assert "Traceback" not in g.log()
