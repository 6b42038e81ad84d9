"""Lite topics at scale (issue 27, RIP-83): N lite topics of one LITE parent created by sending one
message to each over gRPC (raw grpcio, SendMessage requests of --batch messages), then the memory
(private, all processes) and disk (data dir) they take, the send rate, and the receive rate of one
lite push consumer (Telemetry Settings as LITE_PUSH_CONSUMER, SyncLiteSubscription of --subscribe
lite topics, subscribed before the sends, then ReceiveMessage + AckMessage until it has them all, as
the Java SDK 5.2.0 asks: the assigned queue, auto renew). RocketMQ 5.5 is sent one message per request
(it dispatches the messages of a larger request to no lite topic). Side by side: the gateway and
Apache RocketMQ 5.5.0 (name server, one broker with LMQ on, cluster-mode proxy), each at the count
given for it (RocketMQ keeps a ConsumeQueue per lite topic).

    python -m bench.lite_topics [--count 1000000] [--reference-count 20000] [--batch 500]
                                [--subscribe 1000] [--systems gateway,rocketmq]
"""
from __future__ import annotations

import argparse
import os
import queue
import sys
import tempfile
import threading
import time
import uuid

import grpc
from rocketmq.grpc_protocol import definition_pb2 as d, service_pb2 as s, service_pb2_grpc as sg

from bench.brokers import Gateway, RocketMQCluster, free_port
from compat.jvm import MQADMIN, run_tool

PARENT, GROUP = "lite-bench", "lite-bench-g"
LITE_BROKER_CONF = {"enableLmq": "true", "enableMultiDispatch": "true"}
META = [("x-mq-client-id", "lite-bench-consumer"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2"),
        ("x-mq-client-version", "5.2.0")]


def _mqadmin(namesrv: str, args: list[str], logs: str) -> None:
    r = run_tool("rocketmqtools", MQADMIN, [args[0], "-n", namesrv, "-c", "DefaultCluster", *args[1:]], logs)
    if r.returncode != 0:
        raise RuntimeError(r.stdout[-2000:] + r.stderr[-2000:])


def start(system: str, workdir: str):
    """(the running system, its gRPC endpoint) with the LITE parent and the lite group created."""
    if system == "gateway":
        grpc_port = free_port()
        target = Gateway(workdir, extra_args=["--grpc-port", str(grpc_port)]).start()
        endpoint = f"127.0.0.1:{grpc_port}"
    else:
        target = RocketMQCluster(workdir, brokers=("broker-a",), heap="2g", proxy=True, extra=LITE_BROKER_CONF).start()
        endpoint = target.grpc_endpoint
    logs = os.path.join(workdir, "mqadmin")
    _mqadmin(target.namesrv, ["updateTopic", "-t", PARENT, "-r", "8", "-w", "8", "-a", "+message.type=LITE"], logs)
    _mqadmin(target.namesrv, ["updateSubGroup", "-g", GROUP, "--attributes", f"+lite.bind.topic={PARENT}"], logs)
    if system != "gateway":
        time.sleep(8)  # the route reaches the name server a little later
    return target, endpoint


def send_all(stub, count: int, batch: int) -> float:
    """Send one message to each of lite topics lt-0..lt-(count-1), `batch` per SendMessage request; the
    seconds it took."""
    began = time.monotonic()
    for first in range(0, count, batch):
        msgs = [d.Message(topic=d.Resource(name=PARENT), body=b"%d" % i, system_properties=d.SystemProperties(
            message_id=f"{i:032x}", message_type=d.MessageType.LITE, lite_topic=f"lt-{i}",
            body_encoding=d.Encoding.IDENTITY)) for i in range(first, min(first + batch, count))]
        for attempt in range(100):  # a busy server (flow control) is retried, as the SDKs do
            r = stub.SendMessage(s.SendMessageRequest(messages=msgs), metadata=META, timeout=60)
            if r.status.code != d.Code.TOO_MANY_REQUESTS:
                break
            time.sleep(0.2)
        if r.status.code != d.Code.OK:
            raise RuntimeError(f"send failed after {first} messages: {r.status}")
        if first and first % 100_000 == 0:
            print(f"  {first} sent, {first / (time.monotonic() - began):.0f} msg/s", flush=True)
    return time.monotonic() - began


def _drain(stream) -> None:
    """Read the server's Telemetry commands until the stream ends (it is cancelled at the end)."""
    try:
        for _ in stream:
            pass
    except grpc.RpcError:
        pass


class LiteConsumer:
    """A raw lite push consumer: Settings as LITE_PUSH_CONSUMER on a Telemetry stream, its lite topics
    synced (COMPLETE_ADD) and kept alive with Heartbeat and a re-sync every 20 s (RocketMQ 5.5 drops
    a client's lite subscription after 180 s without one, and its settings without heartbeats)."""

    def __init__(self, stub, endpoint: str, lites: list[str]) -> None:
        self.stub, self.lites, self.stopped, self.endpoint = stub, lites, threading.Event(), endpoint
        host, port = endpoint.split(":")
        settings = d.Settings(client_type=d.ClientType.LITE_PUSH_CONSUMER, access_point=d.Endpoints(
            scheme=d.AddressScheme.IPv4, addresses=[d.Address(host=host, port=int(port))]),
            subscription=d.Subscription(group=d.Resource(name=GROUP), subscriptions=[d.SubscriptionEntry(
                topic=d.Resource(name=PARENT), expression=d.FilterExpression(type=d.FilterType.TAG, expression="*"))]))
        settings.request_timeout.FromSeconds(10)
        self.outbound: queue.Queue = queue.Queue()
        self.outbound.put(s.TelemetryCommand(settings=settings))
        threading.Thread(target=_drain, args=(stub.Telemetry(iter(self.outbound.get, None), metadata=META),),
                         daemon=True).start()
        time.sleep(1)
        # as the SDK: subscribeLite adds (PARTIAL_ADD), the periodic sync re-sends the whole set (COMPLETE_ADD)
        self._keep_alive(d.LiteSubscriptionAction.PARTIAL_ADD)
        threading.Thread(target=self._keeper, daemon=True).start()

    def _keep_alive(self, action=d.LiteSubscriptionAction.COMPLETE_ADD) -> None:
        self.stub.Heartbeat(s.HeartbeatRequest(group=d.Resource(name=GROUP), client_type=d.ClientType.LITE_PUSH_CONSUMER),
                            metadata=META, timeout=10)
        status = self.stub.SyncLiteSubscription(s.SyncLiteSubscriptionRequest(
            action=action, topic=d.Resource(name=PARENT), group=d.Resource(name=GROUP),
            lite_topic_set=self.lites), metadata=META, timeout=30).status
        if status.code != d.Code.OK:
            raise RuntimeError(f"SyncLiteSubscription: {status}")

    def _keeper(self) -> None:
        while not self.stopped.wait(20):
            try:
                self._keep_alive()
            except grpc.RpcError:
                pass

    def _queue(self) -> d.MessageQueue:
        """The parent's queue to receive from, as the SDK takes it: QueryAssignment's (RocketMQ 5.5's
        proxy serves a lite receive only on the queue it assigned, with its broker's endpoints)."""
        host, port = self.endpoint.split(":")
        r = self.stub.QueryAssignment(s.QueryAssignmentRequest(topic=d.Resource(name=PARENT), group=d.Resource(name=GROUP),
                                                               endpoints=d.Endpoints(scheme=d.AddressScheme.IPv4,
                                                                                     addresses=[d.Address(host=host, port=int(port))])),
                                      metadata=META, timeout=10)
        if r.status.code != d.Code.OK or not r.assignments:
            raise RuntimeError(f"QueryAssignment: {r.status}")
        return r.assignments[0].message_queue

    def receive_all(self) -> float:
        """The seconds to receive and acknowledge one message of each lite topic (nan: not all came).
        Each ReceiveMessage is the Java SDK 5.2.0 lite push consumer's: the assigned queue, auto renew
        (no invisible duration), an attempt id, no filter expression."""
        began, got, deadline = time.monotonic(), 0, time.monotonic() + 300
        mq = self._queue()
        while got < len(self.lites) and time.monotonic() < deadline:
            req = s.ReceiveMessageRequest(group=d.Resource(name=GROUP), message_queue=mq, batch_size=32, auto_renew=True,
                                          attempt_id=str(uuid.uuid4()))
            req.long_polling_timeout.FromSeconds(5)
            entries = [r.message for r in self.stub.ReceiveMessage(req, metadata=META, timeout=20)
                       if r.HasField("message")]
            if entries:
                got += len(entries)
                self.stub.AckMessage(s.AckMessageRequest(group=d.Resource(name=GROUP), topic=d.Resource(name=PARENT),
                                                         entries=[s.AckMessageEntry(
                                                             message_id=m.system_properties.message_id,
                                                             receipt_handle=m.system_properties.receipt_handle)
                                                             for m in entries]), metadata=META, timeout=20)
        self.received = got
        return time.monotonic() - began if got >= len(self.lites) else float("nan")

    def close(self) -> None:
        self.stopped.set()
        self.outbound.put(None)


def run(system: str, count: int, batch: int, subscribe: int) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"lite-{system}-") as work:
        target, endpoint = start(system, work)
        try:
            channel = grpc.insecure_channel(endpoint, options=[("grpc.max_send_message_length", 64 << 20)])
            stub = sg.MessagingServiceStub(channel)
            n = min(subscribe, count)
            # subscribed before the sends: RocketMQ 5.5 delivers a new subscription only what comes after it
            consumer = LiteConsumer(stub, endpoint, [f"lt-{i}" for i in range(0, count, max(count // n, 1))][:n])
            before = target.memory()
            sent_s = send_all(stub, count, batch)
            time.sleep(2)
            memory, disk = target.memory(), target.data_bytes()
            received_s = consumer.receive_all()
            consumer.close()
            channel.close()
            return {"system": system, "lite_topics": count, "send_per_s": count / sent_s,
                    "memory_mib": memory / 2**20, "memory_growth_mib": (memory - before) / 2**20,
                    "disk_mib": disk / 2**20, "received": consumer.received, "receive_per_s": n / received_s}
        finally:
            target.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.lite_topics")
    ap.add_argument("--count", type=int, default=1_000_000, help="lite topics on the gateway")
    ap.add_argument("--reference-count", type=int, default=20_000, help="lite topics on RocketMQ 5.5")
    ap.add_argument("--batch", type=int, default=500, help="messages per SendMessage request")
    ap.add_argument("--subscribe", type=int, default=1000, help="lite topics the consumer subscribes (quota 2000)")
    ap.add_argument("--systems", default="gateway,rocketmq")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    for system in args.systems.split(","):
        count = args.count if system == "gateway" else args.reference_count
        # RocketMQ 5.5.0 stores the messages of a SendMessage request of more than one message in the
        # parent only: they reach no lite topic (measured), so it is sent one message per request.
        r = run(system, count, args.batch if system == "gateway" else 1, args.subscribe)
        print(f"{r['system']:8} {r['lite_topics']:>9} lite topics: send {r['send_per_s']:>8.0f} msg/s, "
              f"memory {r['memory_mib']:.0f} MiB (+{r['memory_growth_mib']:.0f}), disk {r['disk_mib']:.0f} MiB, "
              f"lite consumer of {r['received']}: {r['receive_per_s']:.0f} msg/s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
