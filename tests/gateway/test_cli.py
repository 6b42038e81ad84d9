"""The `python -m gateway` command line as a user meets it: one-line errors with exit status 2,
one "ready" line per listener, SIGTERM (in-flight requests answered, checkpoint written, exit 0),
and acknowledged records surviving kill -9 in `--flush sync` mode. Real processes, real sockets."""
from __future__ import annotations

import collections
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid

import pytest

import store
from client import Message, Producer, SendStatus
from codec.kafka import protocol, records
from gateway_process import ROOT, free_port

PRODUCE, FETCH = 0, 1


def run_cli(*args: str, timeout: float = 20.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def assert_one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocketgate: error: "), r.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def ports() -> list[str]:
    return ["--kafka-port", str(free_port()), "--remoting-port", str(free_port())]


def test_unknown_flag_is_one_line_exit_2(tmp_path):
    r = run_cli("--data-dir", str(tmp_path / "data"), *ports(), "--no-such-flag")
    assert_one_line_error(r, "--no-such-flag")
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("under, needle", [
    ("file", "is a file, not a directory (--data-dir)"),  # used to say "not writable: File exists"
    ("file/data", "a part of the path is a file"),  # root ignores chmod, not ENOTDIR
])
def test_data_dir_that_is_a_file_is_one_line_exit_2(tmp_path, under, needle):
    (tmp_path / "file").write_bytes(b"not a directory")
    r = run_cli("--data-dir", str(tmp_path / under), *ports())
    assert_one_line_error(r, "data dir", needle)


@pytest.mark.parametrize("flag", ["--kafka-port", "--remoting-port"])
def test_port_in_use_is_one_line_exit_2(tmp_path, flag):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = {"--kafka-port": str(free_port()), "--remoting-port": str(free_port()), flag: str(port)}
        r = run_cli("--data-dir", str(tmp_path / "data"), *[x for kv in args.items() for x in kv])
    assert_one_line_error(r, str(port), "in use", f"({flag})")


@pytest.mark.parametrize("same, needle", [
    (["--kafka-port", "--remoting-port"], "--kafka-port and --remoting-port both ask for port"),
    (["--remoting-port", "--grpc-port"], "--remoting-port and --grpc-port both ask for port"),
    (["--kafka-port", "--http-port"], "--kafka-port and --http-port both ask for port"),
])
def test_two_listeners_on_one_port_name_both_flags(tmp_path, same, needle):
    """Used to be a bare "address already in use" from the second bind."""
    args = {"--kafka-port": str(free_port()), "--remoting-port": str(free_port())}
    port = str(free_port())
    args.update({flag: port for flag in same})
    r = run_cli("--data-dir", str(tmp_path / "data"), *[x for kv in args.items() for x in kv])
    assert_one_line_error(r, needle, port)


def test_extra_listener_on_the_remoting_port_names_it(tmp_path):
    port = free_port()
    r = run_cli("--data-dir", str(tmp_path / "data"), "--kafka-port", str(free_port()), "--remoting-port", str(port),
                "--listener", f"LOCAL=PLAINTEXT://127.0.0.1:{port}")
    assert_one_line_error(r, "--listener LOCAL and --remoting-port both ask for port", str(port))


@pytest.mark.parametrize("args, needle", [
    (["--commitlog-file-size", "1k"], "--commitlog-file-size"),  # parses, but the store needs >= 4096
    (["--commitlog-file-size", "lots"], "--commitlog-file-size"),
    (["--max-message-bytes", "0"], "--max-message-bytes"),
    (["--kafka-port", "70000"], "--kafka-port"),
    (["--message-delay-level", "1s 5x"], "5x"),
])
def test_invalid_value_is_one_line_exit_2(tmp_path, args, needle):
    r = run_cli("--data-dir", str(tmp_path / "data"), *ports(), *args)
    assert_one_line_error(r, needle)


def _read_checkpoint(data_dir: str, name: str) -> int:
    with open(os.path.join(data_dir, name, ".checkpoint"), "rb") as f:
        return int(f.read())


def test_ready_lines_then_sigterm_exits_0_with_checkpoint(gateway_factory):
    g = gateway_factory(extra_args=["--commitlog-file-size", "1m"])
    log = g.log()
    assert log.count("listener ready") == 2, log
    assert log.count(f"kafka listener ready on 127.0.0.1:{g.kafka_port}\n") == 1, log
    assert log.count(f"remoting listener ready on 127.0.0.1:{g.remoting_port}\n") == 1, log
    with Producer("cli-ready", g.namesrv) as p:
        for i in range(20):
            assert p.send(Message("CliCheckpoint", b"m%d" % i)).status == SendStatus.SEND_OK
    # right after the last send: the background flush has most likely not covered it yet
    proc = g.proc
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0, g.log()
    assert time.monotonic() - t0 < 5
    g.proc = None
    log = g.log()
    assert "Traceback" not in log and "stopped cleanly" in log, log
    covered = _read_checkpoint(g.data_dir, "consumequeue")
    assert covered == _read_checkpoint(g.data_dir, "index")
    with store.open(g.data_dir, store.StoreConfig(commitlog_file_size=1 << 20)) as s:
        assert covered == s.commitlog.end > 0  # the checkpoint covers everything written


def _frame_exact(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)


def _call(sock: socket.socket, api_key: int, version: int, correlation: int, body: dict) -> dict:
    sock.sendall(protocol.request_frame(api_key, version, correlation, body))
    size = struct.unpack(">i", _frame_exact(sock, 4))[0]
    got, resp = protocol.decode_response(api_key, version, _frame_exact(sock, size))
    assert got == correlation
    return resp


def test_sigterm_answers_the_request_in_flight(gateway):
    """A Fetch long poll (max_wait 700 ms) sent just before SIGTERM gets its answer; idle
    connections on both ports do not hold the shutdown up."""
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    idle = [socket.create_connection(("127.0.0.1", port)) for port in (gateway.kafka_port, gateway.remoting_port)]
    busy = socket.create_connection(("127.0.0.1", gateway.kafka_port), timeout=10)
    try:
        batch = records.build_batch([(1000, b"k", b"v", [])], base_timestamp=1000)
        produced = _call(busy, PRODUCE, 9, 1, {"acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
        assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0
        end = 1
        fetch = {"replica_id": -1, "max_wait_ms": 700, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                 "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                     {"partition": 0, "fetch_offset": end, "partition_max_bytes": 1 << 20}]}]}
        busy.sendall(protocol.request_frame(FETCH, 12, 2, fetch))
        time.sleep(0.3)  # the gateway is now waiting inside the Fetch
        gateway.proc.send_signal(signal.SIGTERM)
        size = struct.unpack(">i", _frame_exact(busy, 4))[0]
        correlation, resp = protocol.decode_response(FETCH, 12, _frame_exact(busy, size))
        assert correlation == 2 and resp["responses"][0]["partitions"][0]["error_code"] == 0
        assert busy.recv(1) == b""  # then the gateway closes the connection
        assert gateway.proc.wait(10) == 0, gateway.log()
    finally:
        for s in idle + [busy]:
            s.close()


def test_sync_flush_acknowledged_records_survive_kill9(gateway_factory):
    """--flush sync: every record acknowledged through the gateway (Kafka acks=all via librdkafka,
    native sync sends) is there exactly once after kill -9 and a restart on the same data dir."""
    from confluent_kafka import Producer as KProducer
    from kafka import KafkaConsumer, TopicPartition

    g = gateway_factory(flush="sync", extra_args=["--commitlog-file-size", "1m"])
    ktopic, ntopic = f"durK{uuid.uuid4().hex[:8]}", f"durN{uuid.uuid4().hex[:8]}"
    acked: list[bytes] = []
    failed = []

    def report(err, msg):
        (failed if err is not None else acked).append(err or msg.value())

    kp = KProducer({"bootstrap.servers": g.kafka_bootstrap, "acks": "all", "linger.ms": 5,
                    "message.timeout.ms": 15000})
    for i in range(300):
        kp.produce(ktopic, value=b"k-%d-" % i + os.urandom(64), key=b"%d" % i, on_delivery=report)
        if i % 50 == 0:
            kp.poll(0)
    assert kp.flush(15) == 0 and not failed, failed
    with Producer("cli-durable", g.namesrv) as p:
        for i in range(40):
            body = b"n-%d-" % i + os.urandom(64)
            assert p.send(Message(ntopic, body, keys=f"n{i}")).status == SendStatus.SEND_OK
            acked.append(body)
    assert len(acked) == 340
    g.kill9()  # no SIGTERM: nothing flushed or checkpointed on the way out
    g.start()

    kc = KafkaConsumer(bootstrap_servers=g.kafka_bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(t, p) for t in (ktopic, ntopic) for p in sorted(kc.partitions_for_topic(t) or ())]
        assert {tp.topic for tp in tps} == {ktopic, ntopic}
        kc.assign(tps)
        kc.seek_to_beginning(*tps)
        ends = kc.end_offsets(tps)
        got: list[bytes] = []
        deadline = time.monotonic() + 15
        while any(kc.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for records in kc.poll(500).values():
                got += [r.value for r in records]
    finally:
        kc.close()
    counts = collections.Counter(got)
    assert sorted(counts) == sorted(acked)  # nothing lost, nothing made up
    assert max(counts.values()) == 1  # nothing twice
