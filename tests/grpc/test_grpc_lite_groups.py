"""Lite consumer groups (RIP-83, RocketMQ 5.5) through the Java SDK 5.2.0 (compat.RocketLite), Apache
RocketMQ 5.5.0 first (GRPC_TARGET=proxy), then the gateway, with the same assertions:

- late subscriptions with an offset option (SyncLiteSubscription's `offset_option`, the SDK's
  subscribeLite(name, OffsetOption)): a new group subscribes lite topics that already hold messages
  0..4 (0..2 stored before a timestamp, 3..4 after), then message 5 is sent to each;
- the group attributes 5.5 enforces: lite.sub.client.quota (told the client, which refuses the
  subscription past it), lite.bind.topic (a consumer bound to another parent), and mqadmin
  updateSubGroup's refusal of attribute values out of range."""
import json
import os
import re

import pytest

from compat.jvm import run_admin_batch
from lite_target import java_scenarios

pytestmark = pytest.mark.timeout(900)

BAD_ATTRIBUTES = {"quota_text": "+lite.sub.client.quota=abc", "quota_low": "+lite.sub.client.quota=-2",
                  "unknown": "+lite.no.such=1", "sub_model": "+lite.sub.model=Nope"}


def _update_sub_group(target) -> dict:
    """What mqadmin updateSubGroup says to each of BAD_ATTRIBUTES (its exception lines, without the
    broker address and the FAQ link)."""
    out = {}
    commands = [["updateSubGroup", "-n", target.namesrv, "-c", "DefaultCluster", "-g", f"ga-{name}-g",
                 "--attributes", attributes] for name, attributes in BAD_ATTRIBUTES.items()]
    for name, r in zip(BAD_ATTRIBUTES, run_admin_batch([commands], "/tmp")):
        found = re.search(r"CODE: (\d+)\s+DESC: (.*?)(, [\w.$/]+\(\w+\.java:\d+\))?\s*$", r["output"], re.M)
        out[name] = [int(found[1]), found[2]] if found else r["output"][-500:]
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    r = java_scenarios(str(tmp_path_factory.mktemp("grpc-lite-groups")), {"ga-lite": "LITE", "ga-other": "LITE"},
                       {"ga-lo-g": "ga-lite", "ga-quota-g": "+lite.bind.topic=ga-lite,+lite.sub.client.quota=2",
                        "ga-other-g": "ga-other", "ga-unbound-g": "+lite.sub.client.quota=5"},
                       "ga", ["lite_offset", "lite_group_attributes"], before=_update_sub_group)
    if os.environ.get("SHOW"):
        with open(os.environ["SHOW"], "w") as f:
            json.dump({k: v for k, v in r.results.items()}, f, indent=1)
    return r


def test_offset_options_of_late_subscriptions(run):
    """5.5.0 serves MIN, MAX and an offset; TAIL_N and TIMESTAMP start where LAST and no option do: at
    the first message for a new group. (The SDK consumes a lite topic's batch concurrently: the order of
    arrival is not asserted here; tests/grpc/test_grpc_lite.py asserts it one message at a time.)"""
    got = {lite: sorted(bodies) for lite, bodies in run["lite_offset"]["received"].items()}
    everything = [f"-{i}" for i in range(6)]
    assert got == {"omin": ["omin" + b for b in everything], "omax": ["omax-5"], "oat": ["oat-3", "oat-4", "oat-5"],
                   **{lite: [lite + b for b in everything] for lite in ("olast", "otail", "otime", "odefault")}}


def test_group_attributes(run):
    r = run["lite_group_attributes"]
    assert r["quota"]["subscribed"] == ["l0", "l1"]
    assert "response-code=42902] Lite subscription quota exceeded 2" in r["quota"]["error"][0]
    for case in ("other_topic", "unbound"):  # the SDK's start fails: the server ended its Telemetry stream
        assert r[case]["subscribed"] == [] and "java.lang.RuntimeException: Failed to fetch topics after 3 attempts" \
            in r[case]["error"], r[case]["error"]


def test_update_sub_group_refusals(run):
    """SYSTEM_ERROR (1) with the exception 5.5's AttributeUtil throws (5.5 adds its stack frame)."""
    assert run["before"]["found"] == {
        "quota_text": [1, 'java.lang.NumberFormatException: For input string: "abc"'],
        "quota_low": [1, "java.lang.RuntimeException: value is not in range(-1, 9223372036854775807)"],
        "unknown": [1, "java.lang.RuntimeException: unsupported key: lite.no.such"],
        "sub_model": [1, "java.lang.RuntimeException: value is not in set: [Shared, Exclusive]"]}
