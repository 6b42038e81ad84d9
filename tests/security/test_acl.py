"""The ACL model: Kafka's decision rules, filters, validation and persistence; RocketMQ permissions
written onto it; the denial log and the failure limiter."""
import logging

import pytest

from security.acl import (CLUSTER_NAME, AclBinding, AclError, AclFilter, Authorizer, Operation as Op, PatternType as PT,
                          Permission as P, ResourceType as RT)
from security.audit import DenialLog, FailureLimiter
from security import rocketmq_perms as rp

ALICE, BOB = "User:alice", "User:bob"


def acl(principal, rtype, name, op, perm=P.ALLOW, pattern=PT.LITERAL, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


@pytest.fixture
def authz(tmp_path):
    return Authorizer(str(tmp_path / "config"), super_users=["User:admin"])


def test_allow_then_deny_wins(authz):
    authz.create([acl(ALICE, RT.TOPIC, "orders", Op.READ), acl("User:*", RT.TOPIC, "orders", Op.ALL)])
    assert authz.authorize(ALICE, "1.2.3.4", Op.READ, RT.TOPIC, "orders")
    authz.create([acl(ALICE, RT.TOPIC, "ord", Op.READ, P.DENY, PT.PREFIXED)])
    d = authz.decide(ALICE, "1.2.3.4", Op.READ, RT.TOPIC, "orders")
    assert not d.allowed and d.reason == "denied by ACL"
    assert authz.authorize(BOB, "1.2.3.4", Op.READ, RT.TOPIC, "orders")  # the deny names alice only
    authz.create([acl(ALICE, RT.TOPIC, "*", Op.ALL, P.DENY)])
    assert not authz.authorize(ALICE, "h", Op.WRITE, RT.TOPIC, "orders")


def test_prefixed_and_wildcard_patterns(authz):
    authz.create([acl(ALICE, RT.TOPIC, "app.", Op.WRITE, pattern=PT.PREFIXED),
                  acl(BOB, RT.GROUP, "*", Op.READ)])
    assert authz.authorize(ALICE, "h", Op.WRITE, RT.TOPIC, "app.events")
    assert not authz.authorize(ALICE, "h", Op.WRITE, RT.TOPIC, "app")
    assert not authz.authorize(ALICE, "h", Op.WRITE, RT.TOPIC, "other.app.x")
    assert authz.authorize(BOB, "h", Op.READ, RT.GROUP, "any-group")
    assert not authz.authorize(BOB, "h", Op.READ, RT.TOPIC, "any-group")  # another resource type


def test_super_user_is_allowed_everything(authz):
    authz.create([acl("User:*", RT.TOPIC, "*", Op.ALL, P.DENY)])
    assert authz.authorize("User:admin", "h", Op.DELETE, RT.TOPIC, "orders")
    assert authz.authorize("User:admin", "h", Op.ALTER, RT.CLUSTER, CLUSTER_NAME)
    assert not authz.authorize(ALICE, "h", Op.DESCRIBE, RT.TOPIC, "orders")


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.ALL, Op.DESCRIBE])
def test_describe_is_implied(authz, granted):
    authz.create([acl(ALICE, RT.TOPIC, "t", granted)])
    assert authz.authorize(ALICE, "h", Op.DESCRIBE, RT.TOPIC, "t")


@pytest.mark.parametrize("granted", [Op.CREATE, Op.DESCRIBE_CONFIGS, Op.IDEMPOTENT_WRITE])
def test_describe_is_not_implied_by_others(authz, granted):
    authz.create([acl(ALICE, RT.TOPIC, "t", granted)])
    assert not authz.authorize(ALICE, "h", Op.DESCRIBE, RT.TOPIC, "t")


def test_describe_configs_implied_by_alter_configs_and_no_more(authz):
    authz.create([acl(ALICE, RT.TOPIC, "t", Op.ALTER_CONFIGS)])
    assert authz.authorize(ALICE, "h", Op.DESCRIBE_CONFIGS, RT.TOPIC, "t")
    assert not authz.authorize(ALICE, "h", Op.ALTER, RT.TOPIC, "t")
    assert not authz.authorize(ALICE, "h", Op.READ, RT.TOPIC, "t")


def test_deny_of_an_implying_operation_does_not_deny_describe(authz):
    """Kafka: a DENY applies to its own operation (or ALL) only."""
    authz.create([acl(ALICE, RT.TOPIC, "t", Op.DESCRIBE), acl(ALICE, RT.TOPIC, "t", Op.READ, P.DENY)])
    assert authz.authorize(ALICE, "h", Op.DESCRIBE, RT.TOPIC, "t")
    assert not authz.authorize(ALICE, "h", Op.READ, RT.TOPIC, "t")


def test_no_acl_found_both_ways(tmp_path):
    closed = Authorizer(str(tmp_path / "a"))
    opened = Authorizer(str(tmp_path / "b"), allow_everyone_if_no_acl_found=True)
    for authz in (closed, opened):
        authz.create([acl(BOB, RT.TOPIC, "bobs", Op.READ)])
    d = closed.decide(ALICE, "h", Op.READ, RT.TOPIC, "free")
    assert not d.allowed and d.reason == "no ACL found"
    assert opened.authorize(ALICE, "h", Op.READ, RT.TOPIC, "free")
    # once any ACL names the resource, only the ACLs decide, even when open by default
    assert not opened.authorize(ALICE, "h", Op.READ, RT.TOPIC, "bobs")
    assert opened.authorize(BOB, "h", Op.READ, RT.TOPIC, "bobs")


def test_host_matching(authz):
    authz.create([acl(ALICE, RT.TOPIC, "t", Op.READ, host="10.0.0.1")])
    assert authz.authorize(ALICE, "10.0.0.1", Op.READ, RT.TOPIC, "t")
    assert not authz.authorize(ALICE, "10.0.0.2", Op.READ, RT.TOPIC, "t")


def test_validation_is_kafkas(authz):
    bad = [acl(ALICE, RT.ANY, "t", Op.READ), acl(ALICE, RT.TOPIC, "t", Op.READ, pattern=PT.MATCH),
           acl(ALICE, RT.TOPIC, "t", Op.ANY), acl(ALICE, RT.TOPIC, "t", Op.READ, P.ANY),
           acl("alice", RT.TOPIC, "t", Op.READ), acl(ALICE, RT.CLUSTER, "other", Op.ALTER),
           acl(ALICE, RT.TOPIC, "", Op.READ), acl(ALICE, RT.TOPIC, "t", Op.READ, host="")]
    results = authz.create(bad + [acl(ALICE, RT.TOPIC, "t", Op.READ)])
    assert all(isinstance(r, AclError) for r in results[:-1]) and results[-1] is None
    assert authz.bindings() == [acl(ALICE, RT.TOPIC, "t", Op.READ)]


def test_describe_and_delete_by_filter(authz):
    lit, pre, star = (acl(ALICE, RT.TOPIC, "app.x", Op.READ), acl(BOB, RT.TOPIC, "app.", Op.WRITE, pattern=PT.PREFIXED),
                      acl(ALICE, RT.TOPIC, "*", Op.DESCRIBE))
    grp = acl(ALICE, RT.GROUP, "g", Op.READ)
    authz.create([lit, pre, star, grp, lit])
    assert len(authz.bindings()) == 4  # an existing binding is kept once
    assert authz.describe(AclFilter()) == [lit, pre, star, grp]
    assert authz.describe(AclFilter(RT.TOPIC, "app.x", PT.MATCH)) == [lit, pre, star]
    assert authz.describe(AclFilter(RT.TOPIC, "app.x", PT.LITERAL)) == [lit]
    assert authz.describe(AclFilter(RT.ANY, None, PT.PREFIXED)) == [pre]
    assert authz.describe(AclFilter(principal=ALICE, operation=Op.READ)) == [lit, grp]
    assert authz.describe(AclFilter(permission=P.DENY)) == []
    assert authz.describe(AclFilter(resource_type=RT.UNKNOWN)) == []
    removed = authz.delete([AclFilter(RT.TOPIC, "app.x", PT.MATCH, principal=ALICE), AclFilter(RT.GROUP)])
    assert removed == [[lit, star], [grp]]
    assert Authorizer(str(authz.path.rsplit("/", 1)[0])).bindings() == [pre]  # persisted


def test_authorize_any_for_idempotent_write(authz):
    assert not authz.authorize_any(ALICE, "h", Op.WRITE, RT.TOPIC)
    authz.create([acl(ALICE, RT.TOPIC, "a.", Op.WRITE, pattern=PT.PREFIXED)])
    assert authz.authorize_any(ALICE, "h", Op.WRITE, RT.TOPIC)
    authz.create([acl(ALICE, RT.TOPIC, "a", Op.WRITE, P.DENY, PT.PREFIXED)])
    assert not authz.authorize_any(ALICE, "h", Op.WRITE, RT.TOPIC)
    assert authz.authorize_any("User:admin", "h", Op.WRITE, RT.TOPIC)


def test_authorized_operations(authz):
    authz.create([acl(ALICE, RT.TOPIC, "t", Op.READ)])
    ops = [Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER]
    assert authz.authorized_operations(ALICE, "h", RT.TOPIC, "t", ops) == [Op.READ, Op.DESCRIBE]


# ---------------------------------------------------------------- RocketMQ permissions on the same model
def test_rocketmq_grants_are_kafka_acls(authz):
    rp.grant(authz, "alice", "topic", "orders", "PUB|SUB")
    rp.grant(authz, "alice", "group", "g1", "SUB")
    # one grant, both protocols: Kafka produce/fetch/describe on the topic, consume as group g1
    for op in (Op.WRITE, Op.READ, Op.DESCRIBE):
        assert authz.authorize(ALICE, "h", op, RT.TOPIC, "orders")
    assert authz.authorize(ALICE, "h", Op.READ, RT.GROUP, "g1")
    assert rp.effective_perm(authz, ALICE, "h", "topic", "orders") == "PUB|SUB"
    rp.grant(authz, "alice", "topic", "orders", "SUB")  # replaces the earlier grant
    assert rp.effective_perm(authz, ALICE, "h", "topic", "orders") == "SUB"
    rp.grant(authz, "alice", "topic", "orders", "PUB")
    assert rp.effective_perm(authz, ALICE, "h", "topic", "orders") == "PUB"


def test_rocketmq_deny_beats_the_default(authz):
    rp.grant(authz, "alice", "topic", "*", "PUB|SUB")  # defaultTopicPerm
    rp.grant(authz, "alice", "topic", "secret", "DENY")
    assert rp.effective_perm(authz, ALICE, "h", "topic", "anything") == "PUB|SUB"
    assert rp.effective_perm(authz, ALICE, "h", "topic", "secret") == "DENY"
    rp.grant(authz, "alice", "topic", "*", "DENY")  # default DENY = no default grant at all
    assert rp.effective_perm(authz, ALICE, "h", "topic", "anything") == "DENY"
    assert [b for b in authz.bindings() if b.name == "*"] == []


def test_rocketmq_bad_permissions(authz):
    for kind, perm in (("topic", "READ"), ("group", "PUB"), ("queue", "SUB"), ("topic", "")):
        with pytest.raises(AclError):
            rp.grant(authz, "alice", kind, "x", perm)
    assert rp.parse_perm("sub|pub") == rp.PUB | rp.SUB


def test_rocketmq_admin_flag(authz):
    assert not authz.authorize(ALICE, "h", Op.ALTER, RT.CLUSTER, CLUSTER_NAME)
    rp.set_admin(authz, "alice")
    assert authz.authorize(ALICE, "h", Op.ALTER, RT.CLUSTER, CLUSTER_NAME)
    rp.set_admin(authz, "alice", False)
    assert not authz.authorize(ALICE, "h", Op.ALTER, RT.CLUSTER, CLUSTER_NAME)


def test_ip_whitelist(authz):
    rp.set_whitelist(authz, ["10.1.0.0/16", "192.168.1.*", "172.16.0.10-20", "::1"])
    for ip, ok in (("10.1.2.3", True), ("10.2.0.1", False), ("192.168.1.77", True), ("192.168.2.1", False),
                   ("172.16.0.15", True), ("172.16.0.21", False), ("::1", True), ("::ffff:10.1.0.9", True),
                   ("not-an-ip", False)):
        assert rp.whitelisted(authz, ip) is ok, ip
    assert rp.whitelist(Authorizer(str(authz.path.rsplit("/", 1)[0]))) == rp.whitelist(authz)  # persisted
    for bad in ("10.0.0.300", "1.2.3", "a.b.c.*", "1.2.3.9-2", "10.0.0.0/99"):
        with pytest.raises(AclError):
            rp.set_whitelist(authz, [bad])


# ---------------------------------------------------------------- denial log and failure limiter
class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_denials_are_logged_once_per_principal_resource_and_minute(caplog):
    clock = Clock()
    denials = DenialLog(logging.getLogger("test.denials"), clock=clock)
    with caplog.at_level(logging.WARNING, "test.denials"):
        assert denials.denied(ALICE, "READ", "Topic:t", "1.2.3.4")
        assert not denials.denied(ALICE, "READ", "Topic:t", "1.2.3.4")
        clock.t += 30
        assert not denials.denied(ALICE, "READ", "Topic:t", "5.6.7.8")
        assert denials.denied(BOB, "READ", "Topic:t", "1.2.3.4")  # another principal
        assert denials.denied(ALICE, "READ", "Topic:u", "1.2.3.4")  # another resource
        clock.t += 31
        assert denials.denied(ALICE, "READ", "Topic:t", "1.2.3.4")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4
    assert "User:alice" in lines[0] and "1.2.3.4" in lines[0]
    assert "2 more since the last report" in lines[-1]


def test_denial_log_memory_is_bounded():
    clock = Clock()
    denials = DenialLog(logging.getLogger("test.bounded"), clock=clock, max_keys=100)
    for i in range(1000):
        denials.denied(f"User:u{i}", "READ", "Topic:t", "h")
    assert len(denials._last) <= 100


def test_failure_limiter_token_bucket():
    clock = Clock()
    limiter = FailureLimiter(rate=0.5, burst=3, clock=clock, max_addresses=50)
    for _ in range(3):
        assert not limiter.blocked("1.1.1.1")
        limiter.failed("1.1.1.1")
    assert limiter.blocked("1.1.1.1") and not limiter.blocked("2.2.2.2")
    clock.t += 1.9
    assert limiter.blocked("1.1.1.1")
    clock.t += 0.2  # one token back after 2 s
    assert not limiter.blocked("1.1.1.1")
    limiter.failed("1.1.1.1")
    assert limiter.blocked("1.1.1.1")
    for i in range(500):
        limiter.failed(f"10.0.{i // 256}.{i % 256}")
    assert len(limiter._buckets) <= 50


# ---------------------------------------------------------------- the indexed decision against the rules, spelled out
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_NAMES = ["a", "ab", "abc", "b", "*"]
_binding = st.builds(lambda rt, name, pt, who, host, op, perm: AclBinding(
    rt, name if not (pt == PT.PREFIXED and name == "*") else "a", pt, who, host, op, perm),
    st.sampled_from([RT.TOPIC, RT.GROUP]), st.sampled_from(_NAMES), st.sampled_from([PT.LITERAL, PT.PREFIXED]),
    st.sampled_from([ALICE, BOB, "User:*"]), st.sampled_from(["*", "h1", "h2"]),
    st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALL, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS]),
    st.sampled_from([P.ALLOW, P.DENY]))


def _reference(bindings, allow_if_none, principal, host, op, rtype, name) -> bool:
    def on_resource(b):
        return b.resource_type == rtype and (
            (b.pattern_type == PT.LITERAL and b.name in (name, "*")) or
            (b.pattern_type == PT.PREFIXED and name.startswith(b.name)))
    matching = [b for b in bindings if on_resource(b)]
    if not matching:
        return allow_if_none
    mine = [b for b in matching if b.principal in (principal, "User:*") and b.host in (host, "*")]
    if any(b.permission == P.DENY and b.operation in (op, Op.ALL) for b in mine):
        return False
    implied = {Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}, Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS}}
    return any(b.permission == P.ALLOW and b.operation in {op, Op.ALL} | implied.get(op, set()) for b in mine)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bindings=st.lists(_binding, max_size=12), allow_if_none=st.booleans(),
       principal=st.sampled_from([ALICE, BOB]), host=st.sampled_from(["h1", "h2"]),
       op=st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS]),
       rtype=st.sampled_from([RT.TOPIC, RT.GROUP]), name=st.sampled_from(_NAMES[:4]))
def test_decisions_follow_the_rules(tmp_path, bindings, allow_if_none, principal, host, op, rtype, name):
    authz = Authorizer(str(tmp_path / "prop"), allow_everyone_if_no_acl_found=allow_if_none)
    authz.delete([AclFilter()])
    authz.create(bindings)
    assert authz.authorize(principal, host, op, rtype, name) == _reference(
        bindings, allow_if_none, principal, host, op, rtype, name)
