"""What Apache RocketMQ's 5.x proxy (bench/grpc_proxy.py, local mode) answers a ReceiveMessage that
names a broker it does not know, beside one naming its own broker: the behaviour
tests/cluster/test_cluster_grpc.py expects of a gateway (served, "no new message" on an empty topic;
not refused). Not part of `make test` (it starts the name server and the proxy JVMs):

    python tests/cluster/validate_grpc_against_proxy.py
"""
from __future__ import annotations

import os
import queue
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE))]

import grpc  # noqa: E402

from bench.grpc_proxy import RealProxy  # noqa: E402
from gateway.grpc.common import Code, d, s  # noqa: E402

TOPIC, GROUP = "grpc-one", "grpc-one-g"  # RealProxy.create_topics makes the group "<topic>-g"
SERVICE = "/apache.rocketmq.v2.MessagingService/"
METADATA = (("x-mq-client-id", "validate-grpc"), ("x-mq-language", "PYTHON"), ("x-mq-protocol", "v2"))


def _method(channel, kind, name: str, response_class):
    return getattr(channel, kind)(SERVICE + name, request_serializer=lambda m: m.SerializeToString(),
                                  response_deserializer=response_class.FromString)


def main() -> int:
    proxy = RealProxy(tempfile.mkdtemp(prefix="validate-grpc-")).start()
    try:
        proxy.create_topics({TOPIC: "NORMAL"})
        access = d.Endpoints(scheme=d.AddressScheme.IPv4, addresses=[d.Address(host="127.0.0.1",
                                                                               port=proxy.grpc_port)])
        with grpc.insecure_channel(proxy.endpoints) as channel:
            route = _method(channel, "unary_unary", "QueryRoute", s.QueryRouteResponse)(
                s.QueryRouteRequest(topic=d.Resource(name=TOPIC), endpoints=access), timeout=10, metadata=METADATA)
            own = route.message_queues[0].broker.name
            settings = d.Settings(client_type=d.ClientType.SIMPLE_CONSUMER, access_point=access, subscription=(
                d.Subscription(group=d.Resource(name=GROUP), subscriptions=[d.SubscriptionEntry(
                    topic=d.Resource(name=TOPIC), expression=d.FilterExpression(type=d.FilterType.TAG,
                                                                                expression="*"))])))
            settings.request_timeout.seconds = 5
            outbox = queue.Queue()
            outbox.put(s.TelemetryCommand(settings=settings))  # the proxy wants a client's Settings first
            telemetry = _method(channel, "stream_stream", "Telemetry", s.TelemetryCommand)(
                iter(outbox.get, None), metadata=METADATA)
            next(telemetry)
            receive = _method(channel, "unary_stream", "ReceiveMessage", s.ReceiveMessageResponse)
            answers = {}
            for broker in ("broker-9", own):
                request = s.ReceiveMessageRequest(
                    group=d.Resource(name=GROUP), batch_size=1, auto_renew=False,
                    message_queue=d.MessageQueue(topic=d.Resource(name=TOPIC), id=0, broker=d.Broker(name=broker)),
                    filter_expression=d.FilterExpression(type=d.FilterType.TAG, expression="*"))
                request.invisible_duration.seconds = 30
                request.long_polling_timeout.seconds = 1
                answers[broker] = [a.status.code for a in receive(request, timeout=10, metadata=METADATA)
                                   if a.HasField("status")]
                print(f"receive naming {broker}: {answers[broker]}", flush=True)
            outbox.put(None)
            telemetry.cancel()
        ok = answers["broker-9"] == answers[own] == [Code.MESSAGE_NOT_FOUND]
        print("PASS" if ok else "FAIL", flush=True)
        return 0 if ok else 1
    finally:
        proxy.stop()


if __name__ == "__main__":
    sys.exit(main())
