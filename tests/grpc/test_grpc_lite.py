"""Lite topics (RIP-83, RocketMQ 5.5) through the Java gRPC SDK rocketmq-client-java 5.2.0
(compat.RocketLite, LitePushConsumer): a producer sends to lite topics s1, s2, s3 of a LITE parent;
a lite push consumer subscribed to s1 and s2 gets exactly theirs, each in send order, and the lite
topic on every message; after unsubscribing s1 and subscribing s4 at run time it gets s4's new
messages and none of s1's. Illegal lite topic names are refused with ILLEGAL_LITE_TOPIC (40020) and
the proxy's words. Apache RocketMQ 5.5.0 (cluster-mode proxy, LMQ on; GRPC_TARGET=proxy) gave the
same results."""
import pytest

from lite_target import java_scenarios

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    return java_scenarios(str(tmp_path_factory.mktemp("grpc-lite")), {"jl-lite": "LITE"}, {"jl-lite-g": "jl-lite"},
                          "jl", ["lite", "lite_bad_name"])


def test_only_subscribed_lite_topics_in_order(java):
    r = java["lite"]
    assert r["first"] == {"s1": [f"s1-{i}" for i in range(10)], "s2": [f"s2-{i}" for i in range(10)]}
    assert r["subscribed"] == ["s1", "s2"]
    assert r["lite_topic_on_messages"]


def test_subscriptions_change_at_run_time(java):
    assert java["lite"]["after_change"] == {"s4": [f"s4-{i}" for i in range(5)]}


def test_illegal_lite_topic_names(java):
    r = java["lite_bad_name"]
    assert "response-code=40020] lite topic can only contain alphanumeric characters" in r["chars"][0]
    assert "response-code=40020] lite topic exceed the max size 64" in r["long"][0]
