"""semantics.subscription_groups: updateSubGroup's "+key"/"-key" attribute changes, checked with the
RocketMQ 5.5 broker's words (tests/grpc/test_grpc_lite_groups.py compares them with 5.5 through
mqadmin), kept in the store's config."""
from semantics.subscription_groups import SubscriptionGroups


class ConfigStore:
    def __init__(self):
        self.files = {}

    def read_config(self, name, default=None):
        return self.files.get(name, default)

    def write_config(self, name, obj):
        self.files[name] = obj


def test_attributes_are_checked_kept_and_removed():
    store = ConfigStore()
    groups = SubscriptionGroups(store)
    assert groups.quota("g") == 2000 and groups.get("g", "lite.bind.topic") == ""
    assert groups.alter("g", {"+lite.bind.topic": "P", "+lite.sub.client.quota": "2"}) is None
    assert SubscriptionGroups(store).quota("g") == 2 and SubscriptionGroups(store).get("g", "lite.bind.topic") == "P"
    assert groups.alter("g", {"-lite.sub.client.quota": ""}) is None and groups.quota("g") == 2000
    assert groups.alter("g", {"-lite.sub.client.quota": ""}) == \
        "java.lang.RuntimeException: attempt to delete a nonexistent key: lite.sub.client.quota"
    groups.drop("g")
    assert SubscriptionGroups(store).attributes == {}


def test_refusals_leave_the_attributes_as_they_were():
    groups = SubscriptionGroups(ConfigStore())
    groups.alter("g", {"+lite.sub.client.quota": "5"})
    refused = [("+lite.sub.client.quota", "abc"), ("+lite.sub.client.quota ", "1"), ("+priority.factor", "101"),
               ("+lite.sub.model", "Nope"), ("+lite.sub.reset.offset.exclusive", "yes"), ("lite.sub.model", "Shared"),
               ("+lite.no.such", "1"), ("+lite.sub.client.quota", "-2"), ("+lite.sub.client.quota", "１２"),
               ("+lite.sub.client.quota", "")]
    for key, value in refused:
        assert groups.alter("g", {key: value}).startswith("java.lang."), key
    assert groups.alter("g", {"+lite.sub.client.quota": "-2"}) == \
        "java.lang.RuntimeException: value is not in range(-1, 9223372036854775807)"
    assert groups.alter("new", {"-lite.bind.topic": ""}).endswith("while creating topic. key: lite.bind.topic")
    assert groups.attributes == {"g": {"lite.sub.client.quota": "5"}}
